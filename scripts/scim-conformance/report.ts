/** One step of a suite as the runner replayed it. */
export interface StepResult {
  readonly name: string;
  readonly passed: boolean;
  /** Set when the step ran with an adaptation: what changed. */
  readonly adaptation?: string;
  /** The failed assertions or the error. */
  readonly failures: readonly string[];
}

/** A suite's run. */
export interface SuiteResult {
  readonly suite: string;
  readonly steps: readonly StepResult[];
  /** Parts of the suite not replayed at all, with the reason. */
  readonly skipped: readonly string[];
}

/** Counts of a suite: steps, passed, adapted, failed. */
export function countsOf(result: SuiteResult): { steps: number; passed: number; adapted: number; failed: number } {
  return {
    steps: result.steps.length,
    passed: result.steps.filter((s) => s.passed).length,
    adapted: result.steps.filter((s) => s.adaptation).length,
    failed: result.steps.filter((s) => !s.passed).length,
  };
}

/** The report of a run: adaptations by step, failures, and one count line per suite. */
export function formatReport(label: string, results: readonly SuiteResult[]): string {
  const lines: string[] = [`\n== SCIM conformance: ${label} ==`];
  for (const result of results) {
    lines.push(`\n${result.suite}`);
    for (const skipped of result.skipped) lines.push(`  skipped: ${skipped}`);
    for (const step of result.steps) {
      if (step.adaptation) lines.push(`  adapted: ${step.name}: ${step.adaptation}`);
      if (!step.passed) lines.push(`  FAILED: ${step.name}: ${step.failures.join('; ')}`);
    }
  }
  lines.push('');
  for (const result of results) {
    const c = countsOf(result);
    lines.push(`${label} | ${result.suite}: ${c.steps} steps, ${c.passed} passed, ${c.adapted} adapted, ${c.failed} failed`);
  }
  return lines.join('\n');
}
