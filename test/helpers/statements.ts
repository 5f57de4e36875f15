/* The statement capture and plans of harness/statements.ts, where the benchmarks share them with the tests. */
export * from '../../harness/statements.ts';
