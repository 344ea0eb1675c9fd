/** Checkboxes choosing some of a list (a key's scopes, a webhook's events): each value in code, then what it means. */
export function CheckList<T extends string>({
  legend,
  name,
  options,
  chosen,
  onChange,
}: {
  legend: string;
  name: string;
  options: { value: T; what: string }[];
  chosen: T[];
  onChange: (chosen: T[]) => void;
}) {
  return (
    <fieldset>
      <legend>{legend}</legend>
      {options.map(({ value, what }) => (
        <label key={value} class="check">
          <input
            type="checkbox"
            name={name}
            value={value}
            checked={chosen.includes(value)}
            onChange={(e) => onChange(e.currentTarget.checked ? [...chosen, value] : chosen.filter((x) => x !== value))}
          />
          <code>{value}</code> — {what}
        </label>
      ))}
    </fieldset>
  );
}
