type NativeImport = (specifier: string) => Promise<unknown>;

/**
 * Loads an ES-module-only package (pdfjs-dist, eld, syllable) from this CommonJS code. Under Node and tsx,
 * `import()` does it. Jest in CommonJS mode on Node 20 rewrites `import()` into `require()`, which cannot
 * load ES modules (and `eld` exports nothing to `require` at all), so the tests that reach them run in
 * test/support/native-esm.environment.mjs, which hands the host's own `import()` over as a global.
 */
export function importEsm<T>(specifier: string): Promise<T> {
  const host = (globalThis as { __meterNativeImport?: NativeImport }).__meterNativeImport;
  return (host ? host(specifier) : import(specifier)) as Promise<T>;
}
