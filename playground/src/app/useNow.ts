/** The current time, renewed every `ms`: relative times ("3 min ago") stay true. */
import { useEffect, useState } from 'preact/hooks';

export function useNow(ms: number): number {
  const [now, setNow] = useState(Date.now());
  useEffect(() => {
    const t = setInterval(() => setNow(Date.now()), ms);
    return () => clearInterval(t);
  }, []);
  return now;
}
