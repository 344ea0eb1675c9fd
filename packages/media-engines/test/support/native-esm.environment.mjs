/**
 * Jest environment for the tests of the media engines and of media-jobs: jest in CommonJS mode on Node 20 cannot load ES-module-only
 * packages (pdfjs-dist, eld, syllable), and rewrites `import()` in test code into `require()`. This file is
 * not transformed, so its `import()` is Node's own; packages/media-engines/src/esm.ts uses it when present.
 * Select it with a docblock at the top of a test file:
 *   /** @jest-environment ./packages/media-engines/test/support/native-esm.environment.mjs *\/
 */
import { TestEnvironment } from "jest-environment-node";

export default class NativeEsmEnvironment extends TestEnvironment {
  constructor(config, context) {
    super(config, context);
    this.global.__meterNativeImport = (specifier) => import(specifier);
  }
}
