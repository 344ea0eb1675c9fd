import { hostname } from "node:os";
import { connectBus, registerUnroutedGauge, type Bus, type BusLogger, type Consumer } from "@meter/messaging";
import type { InternalKeys, Metrics } from "@meter/service-kit";
import type { KeyVerifier } from "../auth/key-verifier";

export interface RevocationListener {
  /** Connected to the broker and hearing revocations (the TTL covers every moment it is not). */
  isListening(): boolean;
  close(): Promise<void>;
}

export interface RevocationListenerOptions {
  url: string;
  keys: Pick<KeyVerifier, "revoke">;
  /** `billing.catalog.changed`: the gateway's copy of the published catalog is dropped. */
  onCatalogChanged?: () => void;
  /** The gateway's own keys: a revocation counts only when billing-ledger signed it. */
  signing: InternalKeys;
  logger: BusLogger;
  /** Where the bus's unrouted-queue gauge and refused-message counter are reported, once connected. */
  metrics?: Metrics;
  /** Wait between attempts while the broker cannot be reached at all. */
  retryDelayMs?: number;
}

/**
 * Drops each revoked key from this process's cache as soon as billing publishes `billing.key.revoked`,
 * and the copy of the published catalog on `billing.catalog.changed`. Every gateway process has its own
 * exclusive queues, so every replica hears every event. The broker is optional: the gateway serves
 * without it (this keeps trying in the background) and a revoked key then dies by the key cache's TTL,
 * a catalog copy by its own. Once connected, the bus reconnects and re-subscribes by itself.
 */
export function startRevocationListener(opts: RevocationListenerOptions): RevocationListener {
  const retryDelayMs = opts.retryDelayMs ?? 5_000;
  let bus: Bus | undefined;
  let consumer: Consumer | undefined;
  let catalogConsumer: Consumer | undefined;
  let closed = false;
  let wake: (() => void) | undefined;

  // Named after the process for whoever looks at the broker; a queue name allows fewer characters than a host name.
  const processName = `${hostname().replace(/[^A-Za-z0-9._-]/g, "-")}.${process.pid}`;
  const subscribe = async (connected: Bus): Promise<Consumer> =>
    connected.consume({
      queue: `gateway.key-revoked.${processName}`,
      exclusive: true,
      routingKeys: ["billing.key.revoked"],
      handler: async ({ key_id }) => {
        opts.keys.revoke(key_id);
      },
    });

  const run = async (): Promise<void> => {
    while (!closed) {
      try {
        if (!bus) {
          bus = await connectBus({
            url: opts.url,
            name: "gateway",
            topology: "await",
            logger: opts.logger,
            keys: opts.signing,
            ...(opts.metrics ? { registry: opts.metrics.registry } : {}),
            connectTimeoutMs: retryDelayMs,
          });
          if (opts.metrics) registerUnroutedGauge(bus, opts.metrics.registry);
        }
        consumer ??= await subscribe(bus);
        const onCatalogChanged = opts.onCatalogChanged;
        if (onCatalogChanged) {
          catalogConsumer ??= await bus.consume({
            queue: `gateway.catalog-changed.${processName}`,
            exclusive: true,
            routingKeys: ["billing.catalog.changed"],
            handler: async () => onCatalogChanged(),
          });
        }
        return;
      } catch (err) {
        if (closed) return;
        opts.logger.warn(
          { err: err instanceof Error ? err.message : String(err) },
          "not hearing key revocations yet; revoked keys die by the key cache TTL meanwhile",
        );
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, retryDelayMs);
          wake = () => {
            clearTimeout(timer);
            resolve();
          };
        });
      }
    }
  };
  const running = run();

  return {
    isListening: () => consumer !== undefined && (catalogConsumer !== undefined || !opts.onCatalogChanged) && bus?.isConnected() === true,
    async close() {
      closed = true;
      wake?.();
      await running;
      await bus?.close();
    },
  };
}
