// Field-by-field changes: before and after, side by side, as item versions and dry runs list them.
export interface FieldChange {
  field: string;
  previous: unknown;
  value: unknown;
}

const shown = (value: unknown) => (value === undefined ? '—' : JSON.stringify(value, null, 1));

export function Diff({ changes, caption }: { changes: FieldChange[]; caption: string }) {
  if (changes.length === 0) return null;
  return (
    <table class="diff">
      <caption>{caption}</caption>
      <thead><tr><th scope="col">Field</th><th scope="col">Before</th><th scope="col">After</th></tr></thead>
      <tbody>
        {changes.map((change) => (
          <tr key={change.field}>
            <th scope="row"><code>{change.field}</code></th>
            <td class="before"><del>{shown(change.previous)}</del></td>
            <td class="after"><ins>{shown(change.value)}</ins></td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}
