type LogFn = (obj: object, msg?: string) => void;

/** The part of a pino logger the bus uses; pass the service's logger, or nothing for silence. */
export interface BusLogger {
  debug: LogFn;
  info: LogFn;
  warn: LogFn;
  error: LogFn;
}

const ignore: LogFn = () => undefined;

export const silentLogger: BusLogger = { debug: ignore, info: ignore, warn: ignore, error: ignore };
