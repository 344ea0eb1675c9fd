import { Amount } from "./amount";

export interface Figure {
  label: string;
  microrub: number;
  testId?: string;
  /** A line under the amount, in smaller type. */
  detail?: string;
}

/** Amounts side by side, each under its label (a balance's parts); `false` leaves a figure out. */
export function Figures({ figures, testId }: { figures: (Figure | false)[]; testId?: string }) {
  return (
    <dl class="figures" data-testid={testId}>
      {figures.map(
        (f) =>
          f && (
            <div key={f.label}>
              <dt>{f.label}</dt>
              <dd data-testid={f.testId}>
                <Amount microrub={f.microrub} />
              </dd>
              {f.detail && <dd class="detail">{f.detail}</dd>}
            </div>
          ),
      )}
    </dl>
  );
}
