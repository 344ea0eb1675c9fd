import { useCallback, useEffect, useState } from "preact/hooks";

export interface Loaded<T> {
  data: T | undefined;
  error: unknown;
  loading: boolean;
  reload(): void;
}

/** Runs `load` now and whenever `deps` change; a late answer to an older request is dropped. */
export function useLoad<T>(load: () => Promise<T>, deps: unknown[]): Loaded<T> {
  const [state, setState] = useState<{ data: T | undefined; error: unknown; loading: boolean }>({ data: undefined, error: undefined, loading: true });
  const [round, setRound] = useState(0);
  // The caller names what `load` depends on, as with useEffect.
  const run = useCallback(load, deps);
  useEffect(() => {
    let current = true;
    setState((s) => ({ ...s, loading: true }));
    run().then(
      (data) => current && setState({ data, error: undefined, loading: false }),
      (error: unknown) => current && setState((s) => ({ data: s.data, error, loading: false })),
    );
    return () => {
      current = false;
    };
  }, [run, round]);
  return { ...state, reload: () => setRound((r) => r + 1) };
}
