import type { Bus } from "@meter/messaging";
import type { ReadinessCheck } from "@meter/service-kit";
import type { S3ObjectStore } from "./adapters/s3-object-store";
import type { Db } from "./db";

/** What both files processes need to do any work: their database, the object store and the broker. */
export function filesReadiness(db: Db, store: S3ObjectStore, bus: Bus): ReadinessCheck[] {
  return [
    { name: "database", check: async () => void (await db.$queryRawUnsafe("SELECT 1")) },
    { name: "object_store", check: () => store.check() },
    {
      name: "rabbitmq",
      check: async () => {
        if (!bus.isConnected()) throw new Error("not connected");
      },
    },
  ];
}
