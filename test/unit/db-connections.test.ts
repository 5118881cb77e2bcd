// Which failures count as a lost database connection (retried on a new one) and which are the statement's own.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { isConnectionError } from '../../platform/db/connections.ts';

const pgError = (code: string, message = 'x') => Object.assign(new Error(message), { code });

test('a dropped, refused or unreachable connection is a connection error', () => {
  for (const error of [
    pgError('57P01', 'terminating connection due to administrator command'),
    pgError('57P03', 'the database system is starting up'),
    pgError('08006'),
    pgError('55000', 'database "catalog" is not currently accepting connections'),
    pgError('ECONNREFUSED', 'connect ECONNREFUSED 127.0.0.1:5432'),
    new Error('Connection terminated unexpectedly'),
    new Error('Client has encountered a connection error and is not queryable'),
    // MikroORM wraps the driver's error.
    Object.assign(new Error('wrapped'), { cause: pgError('57P01') }),
    new AggregateError([pgError('ECONNREFUSED')], 'every address refused'),
  ]) assert.equal(isConnectionError(error), true, String(error));
});

test("a statement's own failure is not", () => {
  for (const error of [
    pgError('23505', 'duplicate key value violates unique constraint'),
    pgError('22P05', 'unsupported Unicode escape sequence'),
    pgError('40001', 'could not serialize access'),
    pgError('55000', 'cannot refresh materialized view concurrently'),
    new TypeError('x is not a function'),
    'a string',
    undefined,
  ]) assert.equal(isConnectionError(error), false, String(error));
});
