/*
 * `wum`: the command line of the wum service, built on the SDK (wum/sdk). See README, "CLI".
 * Exit codes: 0 success; 1 an API error (its code and detail on stderr) or rejected import
 * rows; 2 a usage error (unknown command or option, missing configuration, unreadable file).
 */
import { Command, CommanderError, type CommandUnknownOpts } from '@commander-js/extra-typings';
import { WumApiError } from 'wum/sdk';
import { adminCommand } from './admin.ts';
import { auditCommand } from './audit.ts';
import { workspaceKeysCommand } from './workspace-keys.ts';
import { addGlobalOptions, closeClients, EXIT, UsageError } from './context.ts';
import { eventsCommand } from './events.ts';
import { productsCommand } from './products.ts';
import { usersCommand } from './users.ts';
import { packageManifest } from '../package-root.ts';

const { version } = packageManifest();

/** The program with every command; `exitOverride` makes commander throw instead of exiting. */
export function buildProgram(): Command {
  const program = new Command('wum')
    .description('Manage the users of wum workspaces, and (as an operator) the workspaces themselves.')
    .version(version)
    .exitOverride()
    .showHelpAfterError('(add --help for usage)');
  addGlobalOptions(program);
  for (const command of [usersCommand(), productsCommand(), eventsCommand(), workspaceKeysCommand(), auditCommand(), adminCommand()]) {
    program.addCommand(command);
  }
  // Added commands do not inherit settings: apply them to the whole tree.
  const apply = (command: CommandUnknownOpts) => {
    command.exitOverride().showHelpAfterError('(add --help for usage)').configureHelp({ showGlobalOptions: true });
    command.commands.forEach(apply);
  };
  program.commands.forEach(apply);
  return program;
}

/** Prints an error the way a person and a script both can read it. */
function report(error: WumApiError): void {
  process.stderr.write(`error: ${error.code}: ${error.detail}\n`);
  for (const field of error.errors) process.stderr.write(`  ${field.field}: ${field.message}\n`);
  if (error.requestId) process.stderr.write(`  (request id ${error.requestId})\n`);
}

/** Runs `wum` with `argv` (process.argv form) and resolves with the exit code. */
export async function run(argv: readonly string[]): Promise<number> {
  try {
    await buildProgram().parseAsync([...argv]);
    return typeof process.exitCode === 'number' ? process.exitCode : EXIT.ok;
  } catch (error) {
    if (error instanceof CommanderError) return error.exitCode === 0 ? EXIT.ok : EXIT.usage;
    if (error instanceof UsageError) {
      process.stderr.write(`error: ${error.message}\n`);
      return EXIT.usage;
    }
    if (error instanceof WumApiError) {
      report(error);
      return EXIT.apiError;
    }
    if ((error as NodeJS.ErrnoException).code === 'EPIPE') return EXIT.ok;
    throw error;
  } finally {
    await closeClients();
  }
}

// A reader that stops early (`wum users export | head`) is not an error.
process.stdout.on('error', (error: NodeJS.ErrnoException) => {
  if (error.code !== 'EPIPE') throw error;
  process.exit(typeof process.exitCode === 'number' ? process.exitCode : EXIT.ok);
});
process.exitCode = await run(process.argv);
