import { ensureDependencies, handOver } from "./bootstrap.mjs";

ensureDependencies();
handOver("infra/local/start.ts", process.argv.slice(2));
