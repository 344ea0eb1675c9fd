/** One jest run over the whole workspace; TypeScript goes through swc (type checking is `pnpm typecheck`). */
const swc = [
  "@swc/jest",
  {
    jsc: { target: "es2022", parser: { syntax: "typescript" }, keepClassNames: true },
    module: { type: "commonjs" },
  },
];

module.exports = {
  testEnvironment: "node",
  transform: { "^.+\\.(t|j)sx?$": swc, "^.+\\.mjs$": swc },
  // ESM-only dependencies are compiled to CommonJS like our own code.
  transformIgnorePatterns: ["/node_modules/\\.pnpm/(?!(file-type|strtok3|token-types|peek-readable|@tokenizer|uint8array-extras|franc|trigram-utils|n-gram|collapse-white-space)@)"],
  // Prisma's generated client imports its own files with .js extensions.
  moduleNameMapper: { "^(\\.{1,2}/.*)\\.js$": "$1" },
  testMatch: ["<rootDir>/{gateway,services,packages,e2e}/**/*.test.ts"],
  testPathIgnorePatterns: ["/node_modules/", "/dist/"],
  testTimeout: 30000,
  setupFiles: ["<rootDir>/packages/testing/src/jest-setup.ts"],
};
