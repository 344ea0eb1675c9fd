import type { ComponentChildren } from "preact";
import { errorText } from "../api";

/** Announced at once by screen readers (role=alert); nothing when there is no error. */
export function ErrorNotice({ error }: { error: unknown }) {
  if (error === undefined || error === null) return null;
  return (
    <p class="notice notice-error" role="alert">
      {errorText(error)}
    </p>
  );
}

/** A polite announcement of what just happened (role=status). */
export function Done({ children }: { children: ComponentChildren }) {
  return (
    <p class="notice notice-done" role="status">
      {children}
    </p>
  );
}
