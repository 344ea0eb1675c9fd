import { defaultDatabaseName, envPrefix, type ServiceName } from "@meter/contracts";
import { defineConfig, type PrismaConfigInternal } from "prisma/config";
import { LOCAL_POSTGRES_URL } from "./services";

/**
 * A service's prisma.config.ts, which the Prisma CLI loads from the service folder (`prisma generate`,
 * run there by `generateClient`): the conventional schema and migrations paths, and the service's
 * database from `<PREFIX>_DATABASE_URL`, else its local database of the one service list.
 */
export function prismaConfigFor(service: ServiceName): PrismaConfigInternal {
  return defineConfig({
    schema: "prisma/schema.prisma",
    migrations: { path: "prisma/migrations" },
    datasource: {
      url: process.env[`${envPrefix(service)}_DATABASE_URL`] ?? `${LOCAL_POSTGRES_URL}/${defaultDatabaseName(service)}`,
    },
  });
}
