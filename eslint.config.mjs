import js from "@eslint/js";
import tseslint from "typescript-eslint";

/**
 * Each service's folder and package name (packages/contracts/src/services.ts is the list; a .mjs
 * config cannot import TypeScript). No service imports another service's code, tests included: what
 * two services share lives in packages/.
 */
const SERVICES = {
  gateway: "gateway",
  text: "services/text",
  "media-jobs": "services/media-jobs",
  files: "services/files",
  "billing-ledger": "services/billing-ledger",
  mcp: "services/mcp",
};

const serviceBoundaries = Object.entries(SERVICES).map(([name, dir]) => ({
  files: [`${dir}/**/*.ts`],
  rules: {
    "no-restricted-imports": [
      "error",
      {
        patterns: Object.entries(SERVICES)
          .filter(([other]) => other !== name)
          .map(([other, otherDir]) => ({
            group: [`@meter/${other}`, `@meter/${other}/*`, `**/${otherDir.split("/").pop()}/src/**`, `**/${otherDir.split("/").pop()}/test/**`],
            message: `${name} may not import ${other}'s code: share it through packages/ (docs/architecture.md)`,
          })),
      },
    ],
  },
}));

/** Shared libraries sit below the services: none of them imports a service. */
const packagesBelowServices = {
  files: ["packages/**/*.ts"],
  rules: {
    "no-restricted-imports": [
      "error",
      {
        patterns: Object.keys(SERVICES).map((name) => ({
          group: [`@meter/${name}`, `@meter/${name}/*`, `**/services/${name}/**`, "**/gateway/src/**"],
          message: "packages/ hold what services share; they never import a service",
        })),
      },
    ],
  },
};

/** Benchmarks run the services as processes and the shared packages in-process: never a service's code. */
const benchAboveServices = {
  files: ["bench/**/*.ts"],
  rules: {
    "no-restricted-imports": [
      "error",
      {
        patterns: Object.keys(SERVICES).map((name) => ({
          group: [`@meter/${name}`, `@meter/${name}/*`, `**/services/${name}/**`, "**/gateway/src/**", "**/gateway/test/**"],
          message: "bench/ imports packages, never a service's code: start the service as a process",
        })),
      },
    ],
  },
};

export default tseslint.config(
  { ignores: ["**/node_modules/**", "**/dist/**", "**/generated/**", ".tools/**", ".local/**", "**/*.js", "**/*.mjs"] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    files: ["**/*.ts", "**/*.tsx"],
    languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname } },
    rules: {
      "@typescript-eslint/no-floating-promises": "error",
      "@typescript-eslint/no-misused-promises": ["error", { checksVoidReturn: { arguments: false } }],
      "@typescript-eslint/await-thenable": "error",
      "@typescript-eslint/no-unused-vars": ["error", { argsIgnorePattern: "^_", varsIgnorePattern: "^_" }],
      "@typescript-eslint/no-explicit-any": "error",
      // An import used only as a type is erased by esbuild without being resolved, and the image build
      // then sees an unresolved workspace import: say `type` where it is one.
      "@typescript-eslint/consistent-type-imports": ["error", { prefer: "type-imports", fixStyle: "inline-type-imports", disallowTypeAnnotations: false }],
      "@typescript-eslint/no-import-type-side-effects": "error",
    },
  },
  ...serviceBoundaries,
  packagesBelowServices,
  benchAboveServices,
);
