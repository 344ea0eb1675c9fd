/**
 * A row as pg returns it, typed from the model Prisma generates from the service's schema.prisma, so a
 * table is declared once (the schema) and raw SQL on the pool reads it with no hand-written twin.
 * Two facts of ours make the mapping exact: every column is its field's name in snake_case (`@map`,
 * checked by `columnNamingErrors` in each such service's tests), and pg returns int8 (Prisma's BigInt)
 * as a decimal string, timestamps as Date, enums and uuids as strings, as Prisma types them.
 */
export type PgRow<Model> = { [K in keyof Model & string as SnakeCase<K>]: PgValue<Model[K]> };

type SnakeCase<S extends string> = S extends `${infer Head}${infer Tail}`
  ? `${Head extends Lowercase<Head> ? Head : `_${Lowercase<Head>}`}${SnakeCase<Tail>}`
  : S;

/** Distributes over a nullable field: `bigint | null` is `string | null`. */
type PgValue<V> = V extends bigint ? string : V;

/** The field's column under the convention PgRow relies on. */
export function snakeCaseOf(field: string): string {
  return field.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);
}

/**
 * The fields of a schema.prisma's models whose column is not their name in snake_case (with or without
 * `@map`): each one would be mistyped by PgRow. Empty when the schema keeps the convention.
 */
export function columnNamingErrors(schema: string): string[] {
  const errors: string[] = [];
  for (const [, model, body] of schema.matchAll(/^model (\w+) \{\n([\s\S]*?)^\}/gm)) {
    for (const line of body!.split("\n")) {
      const field = /^\s+(\w+)\s+\w/.exec(line)?.[1];
      if (!field) continue;
      const column = /@map\("([^"]+)"\)/.exec(line)?.[1] ?? field;
      if (column !== snakeCaseOf(field)) errors.push(`${model}.${field}: column "${column}", PgRow expects "${snakeCaseOf(field)}"`);
    }
  }
  return errors;
}
