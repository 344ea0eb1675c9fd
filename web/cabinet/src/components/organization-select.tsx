import type { AdminOrganization } from "@meter/contracts";

/** A choice among organizations by name; with `none`, an empty first option of that label ("" as its value). */
export function OrganizationSelect({
  orgs,
  value,
  onChange,
  none,
}: {
  orgs: readonly Pick<AdminOrganization, "id" | "name">[];
  value: string;
  onChange: (id: string) => void;
  none?: string;
}) {
  return (
    <select value={value} onChange={(e) => onChange(e.currentTarget.value)} required={none === undefined}>
      {none !== undefined && <option value="">{none}</option>}
      {orgs.map((o) => (
        <option key={o.id} value={o.id}>
          {o.name}
        </option>
      ))}
    </select>
  );
}
