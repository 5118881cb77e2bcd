// Postgres errors read by SQLSTATE name (platform/db/pg-errors.ts): found through wrappers, and given the caller's meaning.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { conflict, notFound } from '../../platform/errors.ts';
import { databaseFailure, hasSqlState, isConnectionState, productErrorOf } from '../../platform/db/pg-errors.ts';

const pgError = (code: string, constraint?: string) => Object.assign(new Error('x'), { code, ...(constraint ? { constraint } : {}) });

test('a database failure is found on the error or on what it wraps, and nothing else is one', () => {
  assert.deepEqual(databaseFailure(pgError('23505', 'items_catalog_sku_key')), { code: '23505', constraint: 'items_catalog_sku_key' });
  assert.deepEqual(databaseFailure(Object.assign(new Error('wrapped'), { cause: pgError('23503') })), { code: '23503' });
  for (const other of [new Error('x'), pgError('ECONNREFUSED'), 'text', undefined, null]) assert.equal(databaseFailure(other), undefined);
});

test('hasSqlState matches by name', () => {
  assert.equal(hasSqlState(pgError('42P04'), 'duplicate_database'), true);
  assert.equal(hasSqlState(pgError('3D000'), 'duplicate_database', 'invalid_catalog_name'), true);
  assert.equal(hasSqlState(pgError('23505'), 'foreign_key_violation'), false);
});

test('connection states: class 08, a server shutting down, starting up or full', () => {
  for (const code of ['08006', '08001', '57P01', '57P02', '57P03', '53300']) assert.equal(isConnectionState(code), true, code);
  for (const code of ['23505', '40001', '55000', '57014']) assert.equal(isConnectionState(code), false, code);
});

test('productErrorOf gives the meaning the caller names for the failure, and nothing for the rest', () => {
  const meanings = {
    unique_violation: (constraint: string | undefined) => (constraint === 'items_catalog_sku_key' ? conflict('SKU taken') : undefined),
    foreign_key_violation: () => notFound('Webhook'),
  };
  assert.equal(productErrorOf(pgError('23505', 'items_catalog_sku_key'), meanings)?.code, 'conflict');
  assert.equal(productErrorOf(pgError('23505', 'other_key'), meanings), undefined);
  assert.equal(productErrorOf(pgError('23503'), meanings)?.code, 'not_found');
  assert.equal(productErrorOf(pgError('40001'), meanings), undefined);
  assert.equal(productErrorOf(new Error('no database'), meanings), undefined);
});
