/** A labelled search box over a list (its matches are the list's own business). */
export function SearchField({ label, value, onInput, placeholder }: { label: string; value: string; onInput: (value: string) => void; placeholder?: string }) {
  return (
    <label class="search">
      {label}
      <input type="search" name="search" value={value} placeholder={placeholder} onInput={(e) => onInput(e.currentTarget.value)} />
    </label>
  );
}
