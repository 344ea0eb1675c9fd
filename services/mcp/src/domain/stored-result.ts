/** Whose a stored result is: only the key that called the tool may download it. */
export interface ResultOwner {
  keyId: string;
  organizationId: string;
}

/** A tool's whole structured result, kept because it was too large to send as one tool result. */
export interface ResultToStore {
  owner: ResultOwner;
  tool: string;
  /** A paid call's key: a repeat of the call keeps one stored result, not one per repeat. */
  idempotencyKey: string | undefined;
  /** The structured result as JSON. */
  content: string;
}

export interface ResultStore {
  /** Keeps the result and returns its id (the existing one for a repeat of the same paid call). */
  save(result: ResultToStore): Promise<string>;
  /** The JSON of an unexpired result of this key; undefined for anyone else's, an expired or an unknown one. */
  find(id: string, keyId: string): Promise<string | undefined>;
}
