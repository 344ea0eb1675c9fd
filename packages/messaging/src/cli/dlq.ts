import { CommandQueues } from "@meter/contracts";
import { connect } from "amqplib";
import { deadLetterCount, purgeDeadLetters, replayDeadLetters, showDeadLetters, workQueueOf } from "../dead-letters";
import { DEAD_LETTER_QUEUE_MAX_LENGTH } from "../topology";

/**
 * npm run dlq -- list | show <queue> [count] | replay <queue> | purge <queue>
 * Over AMQP as the broker user in RABBITMQ_URL (an operator's, with read on the dead-letter queues), no
 * management plugin needed. <queue> is a work queue's name (or its .dlq's).
 */
const USAGE = "usage: npm run dlq -- list | show <queue> [count] | replay <queue> | purge <queue>";

async function main(argv: string[]): Promise<void> {
  const [command, name, countArg] = argv;
  const url = process.env.RABBITMQ_URL ?? "amqp://guest:guest@127.0.0.1:5672";
  if (!command || (command !== "list" && !name)) throw new Error(USAGE);
  const model = await connect(url);
  model.on("error", () => undefined);
  try {
    const queue = workQueueOf(name ?? "");
    switch (command) {
      case "list":
        for (const { queue: work } of Object.values(CommandQueues)) {
          const count = await deadLetterCount(model, work);
          console.log(`${work}.dlq\t${count === null ? "not declared" : `${count} of at most ${DEAD_LETTER_QUEUE_MAX_LENGTH}`}`);
        }
        return;
      case "show":
        for (const letter of await showDeadLetters(model, queue, countArg ? Number(countArg) : 10)) console.log(JSON.stringify(letter));
        return;
      case "replay":
        console.log(`replayed ${await replayDeadLetters(model, queue)} message(s) to ${queue}`);
        return;
      case "purge":
        console.log(`dropped ${await purgeDeadLetters(model, queue)} message(s) from ${queue}.dlq`);
        return;
      default:
        throw new Error(USAGE);
    }
  } finally {
    await model.close().catch(() => undefined);
  }
}

main(process.argv.slice(2)).catch((err: unknown) => {
  console.error(err instanceof Error ? err.message : String(err));
  process.exitCode = 1;
});
