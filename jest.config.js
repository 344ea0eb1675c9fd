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
  transform: { "^.+\\.tsx?$": swc },
  // Prisma's generated client imports its own files with .js extensions.
  moduleNameMapper: { "^(\\.{1,2}/.*)\\.js$": "$1" },
  testMatch: ["<rootDir>/{gateway,services,packages,e2e,infra,web}/**/*.test.ts"],
  testPathIgnorePatterns: ["/node_modules/", "/dist/"],
  // The suite runs real processes on two cores: a test that starts its own stack took over 30 s under a
  // full run's load, so the default is generous; a test that hangs still fails, later.
  testTimeout: 90000,
  setupFiles: ["<rootDir>/packages/testing/src/jest-setup.ts"],
};
