/**
 * Run by generate.test.ts with tsx, the way services run: loads a service's freshly generated client
 * and writes then reads rows through @prisma/adapter-pg. A separate process because the generated
 * client imports its own files as `./x.js`, which tsx maps to `./x.ts` and jest (as configured) does not.
 * Usage: tsx client-roundtrip.ts <serviceDir> <databaseUrl>; prints the author it read back as JSON.
 */
import { createRequire } from "node:module";
import path from "node:path";
import { PrismaPg } from "@prisma/adapter-pg";

type Author = { id: string; email: string; notes: { title: string; status: string }[] };
type SampleClient = {
  author: {
    create(args: object): Promise<Author>;
    findUniqueOrThrow(args: object): Promise<Author>;
  };
  $disconnect(): Promise<void>;
};
type ClientModule = { PrismaClient: new (options: { adapter: PrismaPg }) => SampleClient };

async function main(serviceDir: string, url: string): Promise<void> {
  const { PrismaClient } = createRequire(__filename)(path.join(serviceDir, "src", "generated", "prisma", "client")) as ClientModule;
  const db = new PrismaClient({ adapter: new PrismaPg({ connectionString: url }) });
  try {
    const created = await db.author.create({ data: { email: "ada@example.com", notes: { create: { title: "first" } } } });
    const read = await db.author.findUniqueOrThrow({
      where: { id: created.id },
      select: { email: true, notes: { select: { title: true, status: true } } },
    });
    process.stdout.write(JSON.stringify(read));
  } finally {
    await db.$disconnect();
  }
}

const [serviceDir, url] = process.argv.slice(2);
if (!serviceDir || !url) throw new Error("usage: client-roundtrip.ts <serviceDir> <databaseUrl>");
main(serviceDir, url).catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});
