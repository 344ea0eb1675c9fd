/** @jest-environment ./packages/media-engines/test/support/native-esm.environment.mjs */
import { readFileSync } from "node:fs";
import path from "node:path";
import { ModelUpsert, type UnitTariff } from "@meter/contracts";
import { repoRoot } from "@meter/local-infra";
import { LOCAL_MODEL_IDS, LOCAL_MODELS } from "@meter/media-engines";
import { seedWithCapabilities } from "./catalog-seed";
import { capabilitiesOf } from "./model-capabilities";

const seed = JSON.parse(readFileSync(path.join(repoRoot(), "infra/catalog/models.json"), "utf8")) as Record<string, unknown>;

describe("the catalog seed's built-in media models", () => {
  test("every entry is one the admin API takes", () => {
    for (const entry of Object.values(seed)) expect(ModelUpsert.safeParse(entry).error).toBeUndefined();
  });

  test("every registry model is seeded under its own id, priced in the unit its engine counts", () => {
    for (const id of LOCAL_MODEL_IDS) {
      const entry = ModelUpsert.parse(seed[id]);
      expect(entry).toMatchObject({ enabled: true, provider: { kind: "local", upstream_model: id } });
      const tariff = entry.operations[LOCAL_MODELS[id].operation] as UnitTariff | undefined;
      expect(tariff?.unit).toBe(LOCAL_MODELS[id].unit);
    }
  });

  test("the published capabilities are the registry's (run `pnpm --filter @meter/media-jobs catalog:capabilities` after changing a model)", () => {
    expect(seed).toEqual(seedWithCapabilities(seed));
    const ocr = ModelUpsert.parse(seed["meter-local-ocr"]).operations.ocr;
    expect(ocr?.capabilities).toEqual(capabilitiesOf("meter-local-ocr"));
    expect(ocr?.capabilities).toMatchObject({
      settings: { type: "object", properties: { language: { enum: ["auto", "en", "ru", "eng", "rus"] } }, additionalProperties: false },
      limits: { max_files: 20, max_pages_per_document: 200 },
    });
  });

  test("a copy of a provider block under another id gets the same capabilities; other entries are left alone", () => {
    const copy = {
      enabled: true,
      provider: { kind: "local", upstream_model: "meter-local-text-analysis" },
      operations: { text_analysis: { unit: "character", price_per_unit_microrub: 1 } },
    };
    const remote = {
      enabled: true,
      provider: { kind: "anthropic", base_url: "https://api.example.com" },
      operations: { text: { input_microrub_per_1k_tokens: 1, output_microrub_per_1k_tokens: 1 } },
    };
    const out = seedWithCapabilities({ "my-analysis": copy, remote });
    expect(out.remote).toBe(remote);
    expect((out["my-analysis"] as { operations: { text_analysis: UnitTariff } }).operations.text_analysis.capabilities).toEqual(
      capabilitiesOf("meter-local-text-analysis"),
    );
  });
});
