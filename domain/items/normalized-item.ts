// The item as the service stores and compares it: a payload validated and normalized, with its content hash.
import type { MediaRole } from '../../generated/client.ts';
import type { ErrorDetail } from '../../platform/errors.ts';

export interface NormalizedMedia {
  /** As given, trimmed; what the downloader fetches. */
  url: string;
  normalizedUrl: string;
  sourceUrlHash: string;
  role: MediaRole;
  sortOrder: number;
}

export interface NormalizedItem {
  externalSystem: string;
  externalId: string;
  sku: string | null;
  name: string;
  description: string | null;
  price: number | null;
  cost: number | null;
  weight: number | null;
  gtin13: string | null;
  /** 8 digits, dots stripped. */
  ncm: string | null;
  category: { name: string } | null;
  brand: { name: string } | null;
  /** Trimmed, NFC, de-duplicated, sorted by code point; [] when absent. */
  tags: string[];
  /** NFC keys and strings; null when absent or empty. */
  metadata: Record<string, unknown> | null;
  /** Ordered by (sortOrder, normalizedUrl); [] when absent. */
  media: NormalizedMedia[];
  trackStock: boolean;
  contentHash: string;
}

export type NormalizeResult =
  | { ok: true; item: NormalizedItem }
  | { ok: false; details: ErrorDetail[]; externalId?: string };
