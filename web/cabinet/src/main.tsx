import { render } from "preact";
import { App } from "./app";
import "./styles.css";

const root = document.getElementById("app")!;
// The page's "Loading…" placeholder goes: render() would otherwise keep it beside the app.
root.replaceChildren();
render(<App />, root);
