// Validates an OpenAPI document (JSON on stdin) against the OpenAPI 3.1 schema with
// @seriousme/openapi-schema-validator, an ES module that jest's CommonJS runtime cannot load; the
// test runs this file with node. Prints {valid, version, errors}.
import { Validator } from "@seriousme/openapi-schema-validator";

const chunks = [];
for await (const chunk of process.stdin) chunks.push(chunk);
const validator = new Validator();
const result = await validator.validate(JSON.parse(Buffer.concat(chunks).toString("utf8")));
process.stdout.write(JSON.stringify({ valid: result.valid, version: validator.version, errors: result.errors ?? [] }));
