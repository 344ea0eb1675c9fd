import { chromium, type Browser } from "playwright-core";
import { CHROMIUM_HEADLESS_ARGS, ensureChromium, type ChromiumInfo } from "@meter/local-infra";

/** The machine's Chromium (Debian's), found or installed; its progress goes to the test's output. */
export function chromiumReady(): Promise<ChromiumInfo> {
  return ensureChromium({ log: (line) => console.log(`[chromium] ${line}`) });
}

/** Chromium headless with the project's switches, but for `--headless`: playwright passes its own. */
export function launchBrowser(info: ChromiumInfo): Promise<Browser> {
  return chromium.launch({ executablePath: info.executable, headless: true, args: CHROMIUM_HEADLESS_ARGS.filter((a) => a !== "--headless") });
}
