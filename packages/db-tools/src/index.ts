export { ensureClient, generateClient } from "./generate";
export { checkDrift, createMigration, deployMigrations } from "./migrations";
export type { CreatedMigration, CreateMigrationOptions, DeployOptions, DriftOptions } from "./migrations";
export { dropDatabase, ensureDatabase, withDatabaseName } from "./postgres";
export { listServices, serviceDatabaseEnvVar, serviceDatabaseUrl } from "./services";
export { prismaConfigFor } from "./prisma-config";
export { backupDatabase, restoreDatabase } from "./backup";
