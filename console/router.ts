// Screens are addressed by the fragment (#/imports/…), so the server serves one page and no
// address the browser sends names a screen, an id or a token.
import { signal } from '@preact/signals';

const current = () => decodeURIComponent(location.hash.replace(/^#\/?/, '')).split('/').filter((part) => part !== '');

export const route = signal<string[]>(current());
addEventListener('hashchange', () => { route.value = current(); });

export const href = (...parts: string[]): string => `#/${parts.map((part) => encodeURIComponent(part)).join('/')}`;

export function go(...parts: string[]): void {
  location.hash = href(...parts);
  // Setting the hash it already has fires no hashchange.
  route.value = current();
}
