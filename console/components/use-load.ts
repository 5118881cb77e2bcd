// Loads a screen's data through the API, again on demand or every `everyMs` while `live` says so.
import { useCallback, useEffect, useRef, useState } from 'preact/hooks';

export interface Loaded<T> {
  data: T | undefined;
  error: unknown;
  loading: boolean;
  reload: () => Promise<void>;
}

export function useLoad<T>(load: () => Promise<T>, deps: unknown[], poll?: { everyMs: number; live: (data: T | undefined) => boolean }): Loaded<T> {
  const [data, setData] = useState<T | undefined>(undefined);
  const [error, setError] = useState<unknown>(undefined);
  const [loading, setLoading] = useState(true);
  const latest = useRef(0);
  const reload = useCallback(async () => {
    const turn = ++latest.current;
    setLoading(true);
    try {
      const value = await load();
      if (turn === latest.current) { setData(value); setError(undefined); }
    } catch (caught) {
      if (turn === latest.current) setError(caught);
    } finally {
      if (turn === latest.current) setLoading(false);
    }
  }, deps);
  useEffect(() => { void reload(); }, [reload]);
  useEffect(() => {
    if (!poll || !poll.live(data)) return undefined;
    const timer = setTimeout(() => void reload(), poll.everyMs);
    return () => clearTimeout(timer);
  }, [data, reload]);
  return { data, error, loading, reload };
}
