import { z } from "zod";
import { CommonConfig, ConfigError, env, migrationConfig, parseConfig, serviceEnv } from "./index";

const Config = CommonConfig.extend({
  ADMIN_TOKEN: env.token(16),
  UPLOAD_SECRET: env.optionalToken(),
  RABBITMQ_URL: env.secretUrl("amqp://guest:guest@127.0.0.1:5672"),
  TEXT_DATABASE_URL: serviceEnv.databaseUrl("text"),
  OBJECT_STORE_ENDPOINT: env.url("http://127.0.0.1:9000"),
  OBJECT_STORE_SECRET_KEY: env.password("S3RVER", "OBJECT_STORE_ENDPOINT"),
  GREETING: z.string().default("hello"),
});

const KEYS = { INTERNAL_SIGNING_KEY: "k".repeat(40), INTERNAL_PUBLIC_KEYS: "p".repeat(40) };
const TOKEN = "3f9a1c0b7e6d5a4f8b2c9d0e1f7a6b5c";
const strong = {
  ...KEYS,
  NODE_ENV: "production",
  ADMIN_TOKEN: TOKEN,
  RABBITMQ_URL: "amqps://meter-text:8c1f0e9d2b3a4c5d6e7f8091a2b3c4d5@rabbitmq.internal:5671/meter",
  TEXT_DATABASE_URL: "postgresql://meter_text_app:0a1b2c3d4e5f60718293a4b5c6d7e8f9@db.internal:5432/meter_text",
  OBJECT_STORE_ENDPOINT: "https://objects.example.com",
  OBJECT_STORE_SECRET_KEY: "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
};
const problemsOf = (source: NodeJS.ProcessEnv): string[] => {
  try {
    parseConfig(Config, source);
    return [];
  } catch (e) {
    if (e instanceof ConfigError) return e.problems;
    throw e;
  }
};

describe("secrets in production", () => {
  it("accepts generated secrets", () => {
    expect(problemsOf(strong)).toEqual([]);
  });

  it("refuses a placeholder in any setting, secret or not, whatever its case", () => {
    expect(
      problemsOf({
        ...strong,
        ADMIN_TOKEN: "CHANGE-ME-admin-token-0123456789abcdef",
        GREETING: "changeme",
        INTERNAL_SIGNING_KEY: `change-me-${"k".repeat(40)}`,
      }),
    ).toEqual([
      "INTERNAL_SIGNING_KEY: holds a placeholder (change-me): replace it with a generated secret",
      "ADMIN_TOKEN: holds a placeholder (change-me): replace it with a generated secret",
      "GREETING: holds a placeholder (change-me): replace it with a generated secret",
    ]);
  });

  it("refuses a token that is short, outside the base64/hex alphabet, or of few characters", () => {
    for (const token of ["0123456789abcdef0123456789abcde", "correct horse battery staple and more", "abababababababababababababababababab", "a".repeat(64)]) {
      expect(problemsOf({ ...strong, ADMIN_TOKEN: token })).toEqual([expect.stringMatching(/^ADMIN_TOKEN: too weak for production/)]);
    }
    expect(problemsOf({ ...strong, UPLOAD_SECRET: "x".repeat(40) })).toEqual([expect.stringMatching(/^UPLOAD_SECRET: too weak/)]);
    expect(problemsOf({ ...strong, ADMIN_TOKEN: `adm_${TOKEN}`, UPLOAD_SECRET: Buffer.from(TOKEN).toString("base64") })).toEqual([]);
  });

  it("refuses a weak password in a database or broker URL, and a weak object store key", () => {
    expect(
      problemsOf({
        ...strong,
        RABBITMQ_URL: "amqps://meter-text:guest@rabbitmq.internal:5671/meter",
        TEXT_DATABASE_URL: "postgresql://meter_text_app:secret@db.internal:5432/meter_text",
        OBJECT_STORE_SECRET_KEY: "minioadmin",
      }),
    ).toEqual([
      expect.stringMatching(/^RABBITMQ_URL: password too weak/),
      expect.stringMatching(/^TEXT_DATABASE_URL: password too weak/),
      expect.stringMatching(/^OBJECT_STORE_SECRET_KEY: password too weak/),
    ]);
  });

  it("refuses the local defaults when production reaches a dependency elsewhere", () => {
    expect(problemsOf({ ...strong, RABBITMQ_URL: undefined, OBJECT_STORE_SECRET_KEY: undefined })).toEqual([
      expect.stringMatching(/^OBJECT_STORE_SECRET_KEY: password too weak/),
    ]);
    expect(problemsOf({ ...strong, RABBITMQ_URL: "amqp://guest:guest@rabbitmq:5672" })).toEqual([expect.stringMatching(/^RABBITMQ_URL: password too weak/)]);
  });

  it("does not measure passwords of dependencies on this host, nor a URL without a password", () => {
    expect(
      problemsOf({
        ...strong,
        RABBITMQ_URL: "amqp://guest:guest@127.0.0.1:5672/test",
        TEXT_DATABASE_URL: "postgresql://meter_text_app@db.internal:5432/meter_text?sslmode=verify-full",
        OBJECT_STORE_ENDPOINT: "http://localhost:9000",
        OBJECT_STORE_SECRET_KEY: "S3RVER",
      }),
    ).toEqual([]);
  });

  it("leaves development and tests alone, but for each setting's own minimum", () => {
    expect(problemsOf({ ...KEYS, NODE_ENV: "development", ADMIN_TOKEN: "change-me-admin-token" })).toEqual([]);
    expect(problemsOf({ ...KEYS, NODE_ENV: "test", ADMIN_TOKEN: "short" })).toEqual([expect.stringMatching(/^ADMIN_TOKEN: must be at least 16/)]);
  });
});

describe("a migration Job's settings in production", () => {
  const Migration = migrationConfig("TEXT");
  const owner = "postgresql://meter_text_owner:0a1b2c3d4e5f60718293a4b5c6d7e8f9@db.internal:5432/meter_text";
  const problems = (source: NodeJS.ProcessEnv): string[] => {
    try {
      parseConfig(Migration, source);
      return [];
    } catch (e) {
      if (e instanceof ConfigError) return e.problems;
      throw e;
    }
  };

  it("accepts a generated owner password", () => {
    expect(problems({ NODE_ENV: "production", TEXT_MIGRATION_DATABASE_URL: owner })).toEqual([]);
  });

  it("refuses the example's placeholder and a weak password, as the service itself would", () => {
    expect(problems({ NODE_ENV: "production", TEXT_MIGRATION_DATABASE_URL: owner.replace(/:[0-9a-f]{32}@/, ":change-me-text-owner@") })).toEqual([
      expect.stringMatching(/^TEXT_MIGRATION_DATABASE_URL: holds a placeholder/),
    ]);
    expect(problems({ NODE_ENV: "production", TEXT_DATABASE_URL: owner.replace(/:[0-9a-f]{32}@/, ":secret@") })).toEqual([
      expect.stringMatching(/^TEXT_DATABASE_URL: password too weak/),
    ]);
  });
});
