import { ensureDependencies, handOver } from "./bootstrap.mjs";

ensureDependencies();
handOver("infra/local/test.ts", process.argv.slice(2));
