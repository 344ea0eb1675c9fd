/** @jest-environment ./packages/media-engines/test/support/native-esm.environment.mjs */
import { Unit } from "@meter/contracts";
import { UnsupportedParameterError } from "./errors";
import { LOCAL_MODELS, LOCAL_MODEL_IDS, createLocalEngines, describeLocalModels, localModel, parseModelSettings } from ".";

function refusal(id: Parameters<typeof parseModelSettings>[0], settings: unknown): UnsupportedParameterError {
  try {
    parseModelSettings(id, settings);
  } catch (error) {
    if (error instanceof UnsupportedParameterError) return error;
    throw error;
  }
  throw new Error("settings were accepted");
}

describe("the local model registry", () => {
  test("one built-in model per media operation, each with a catalog unit", () => {
    expect(LOCAL_MODEL_IDS.map((id) => [id, LOCAL_MODELS[id].operation, LOCAL_MODELS[id].unit])).toEqual([
      ["meter-local-ocr", "ocr", "page"],
      ["meter-local-image-edit", "image_edit", "request"],
      ["meter-local-image-analysis", "image_analysis", "image"],
      ["meter-local-image-detection", "image_analysis", "image"],
      ["meter-local-text-analysis", "text_analysis", "character"],
    ]);
    for (const id of LOCAL_MODEL_IDS) expect(Unit.options).toContain(LOCAL_MODELS[id].unit);
    expect(localModel("meter-local-ocr")?.limits).toMatchObject({ maxFiles: 20, maxPagesPerDocument: 200 });
    expect(localModel("meter-local-text-analysis")?.limits).toEqual({ maxInputCharacters: 100_000 });
    expect(localModel("gpt-4")).toBeUndefined();
  });

  test("declared settings are accepted, absent settings are none", () => {
    expect(parseModelSettings("meter-local-text-analysis", { tasks: ["language", "keywords"], language: "ru", max_keywords: 5 })).toEqual({
      tasks: ["language", "keywords"],
      language: "ru",
      max_keywords: 5,
    });
    expect(parseModelSettings("meter-local-ocr", { language: "rus" })).toEqual({ language: "rus" });
    expect(parseModelSettings("meter-local-ocr", undefined)).toEqual({});
    expect(parseModelSettings("meter-local-image-analysis", null)).toEqual({});
  });

  test("a setting a model does not declare is unsupported_parameter, naming it and what is accepted", () => {
    const error = refusal("meter-local-text-analysis", { tasks: ["language"], temperature: 0.2 });
    expect(error).toMatchObject({ code: "unsupported_parameter", parameter: "settings.temperature" });
    expect(error.message).toContain('"temperature" not supported');
    expect(error.message).toContain("tasks: array of language, sentiment, entities, keywords, readability, statistics");
    expect(refusal("meter-local-image-analysis", { tasks: ["faces"] }).message).toContain("takes no settings");
    expect(refusal("meter-local-image-edit", { strength: 1 }).parameter).toBe("settings.strength");
    expect(refusal("meter-local-image-detection", { min_confidence: 0.1 }).parameter).toBe("settings.min_confidence");
    expect(parseModelSettings("meter-local-image-detection", { min_confidence: 0.5 })).toEqual({ min_confidence: 0.5 });
  });

  test("a value outside what the model allows is unsupported_parameter too", () => {
    expect(refusal("meter-local-text-analysis", { tasks: ["summarize"] })).toMatchObject({ parameter: "settings.tasks.0" });
    expect(refusal("meter-local-text-analysis", { max_keywords: 500 })).toMatchObject({ parameter: "settings.max_keywords" });
    expect(refusal("meter-local-ocr", { language: "deu" })).toMatchObject({ parameter: "settings.language" });
    expect(refusal("meter-local-ocr", "eng")).toMatchObject({ parameter: "settings" });
  });

  test("descriptions are JSON with a JSON Schema per model's settings", () => {
    const described = describeLocalModels();
    expect(JSON.parse(JSON.stringify(described))).toEqual(described);
    const text = described.find((m) => m.id === "meter-local-text-analysis")!;
    expect(text.settings_schema).toMatchObject({ type: "object", additionalProperties: false, properties: { max_keywords: { type: "integer" } } });
  });

  test("engines by model id", async () => {
    const engines = createLocalEngines({ ocrProcesses: 1 });
    try {
      for (const id of LOCAL_MODEL_IDS) expect(engines.engine(id).operation).toBe(LOCAL_MODELS[id].operation);
      const result = await engines.engine("meter-local-text-analysis").run({ input: "Hello world.", settings: { tasks: ["statistics"] } });
      expect(result.quantity).toBe(12);
    } finally {
      await engines.close();
    }
  });
});
