// Cursor pages appended one after another ("Show more"), as every list of the API pages them.
import { useCallback, useEffect, useState } from 'preact/hooks';

export interface Pages<T> {
  rows: T[];
  error: unknown;
  loading: boolean;
  more: (() => void) | undefined;
  reload: () => void;
}

export function usePages<T>(page: (cursor: string | undefined) => Promise<{ rows: T[]; nextCursor: string | null }>, deps: unknown[]): Pages<T> {
  const [rows, setRows] = useState<T[]>([]);
  const [next, setNext] = useState<string | null>(null);
  const [error, setError] = useState<unknown>(undefined);
  const [loading, setLoading] = useState(true);
  const load = useCallback(async (cursor: string | undefined) => {
    setLoading(true);
    try {
      const answer = await page(cursor);
      setRows((before) => (cursor === undefined ? answer.rows : [...before, ...answer.rows]));
      setNext(answer.nextCursor);
      setError(undefined);
    } catch (caught) {
      setError(caught);
    } finally {
      setLoading(false);
    }
  }, deps);
  useEffect(() => { void load(undefined); }, [load]);
  return { rows, error, loading, more: next ? () => void load(next) : undefined, reload: () => void load(undefined) };
}
