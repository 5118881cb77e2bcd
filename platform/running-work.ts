// A count of one kind of work running in this process, for other parts of it to make room for (media yields to imports).

export interface RunningWork {
  /** How many are running now. */
  readonly count: number;
  /** One more is running; call the returned function once it has ended (a second call does nothing). */
  begin(): () => void;
  /** `listener` hears the new count each time it changes. */
  onChange(listener: (count: number) => void): void;
}

export function runningWork(): RunningWork {
  let count = 0;
  const listeners: Array<(count: number) => void> = [];
  const changed = () => { for (const listener of listeners) listener(count); };
  return {
    get count() { return count; },
    begin() {
      count += 1;
      changed();
      let ended = false;
      return () => {
        if (ended) return;
        ended = true;
        count -= 1;
        changed();
      };
    },
    onChange(listener) { listeners.push(listener); },
  };
}
