import { ErrorCode, ThymosError } from '../shared/errors/index.js';
import { COMMANDS } from './command-book.js';
import type { CommandSpec } from './command-spec.js';

const flags = (c: CommandSpec) => [
  ...Object.entries(c.options).flatMap(([name, o]) => [`--${name}`, ...(o.short ? [`-${o.short}`] : [])]),
  '--help',
];
/** Options whose value is a file name. */
const takesFile = (o: { value?: string }) => o.value?.startsWith('FILE') === true;
const quote = (s: string) => `'${s.replace(/'/g, "'\\''")}'`;

/** A bash completion script: commands, then each command's options; file names after --config and --context. */
export function bashCompletion(): string {
  const cases = COMMANDS.map((c) => `    ${c.name}) opts=${quote(flags(c).join(' '))} ;;`);
  const fileOptions = [
    ...new Set(
      COMMANDS.flatMap((c) =>
        Object.entries(c.options)
          .filter(([, o]) => takesFile(o))
          .map(([n]) => `--${n}`),
      ),
    ),
  ];
  return `# thymos completion for bash: source <(thymos completion bash)
_thymos() {
  local cur prev opts
  cur="\${COMP_WORDS[COMP_CWORD]}"
  prev="\${COMP_WORDS[COMP_CWORD-1]}"
  if [ "$COMP_CWORD" -eq 1 ]; then
    COMPREPLY=( $(compgen -W ${quote(COMMANDS.map((c) => c.name).join(' '))} -- "$cur") )
    return
  fi
  case "$prev" in
    ${fileOptions.join('|')}) COMPREPLY=( $(compgen -f -- "$cur") ); return ;;
  esac
  case "\${COMP_WORDS[1]}" in
    help) [ "$COMP_CWORD" -eq 2 ] && COMPREPLY=( $(compgen -W ${quote(COMMANDS.map((c) => c.name).join(' '))} -- "$cur") ); return ;;
    completion) [ "$COMP_CWORD" -eq 2 ] && COMPREPLY=( $(compgen -W 'bash zsh' -- "$cur") ); return ;;
${cases.join('\n')}
    *) opts='' ;;
  esac
  if [[ "$cur" == -* ]]; then COMPREPLY=( $(compgen -W "$opts" -- "$cur") ); fi
}
complete -o default -F _thymos thymos
`;
}

/** A zsh completion script (a #compdef function): commands with what they do, then each command's options. */
export function zshCompletion(): string {
  const esc = (s: string) => s.replace(/'/g, "'\\''").replace(/[[\]:]/g, '\\$&');
  const commands = COMMANDS.map((c) => `    '${c.name}:${esc(c.summary)}'`);
  const cases = COMMANDS.map((c) => {
    const specs = Object.entries(c.options).map(
      ([name, o]) =>
        `'--${name}[${esc(o.help)}]${o.type === 'string' ? `:${esc(o.value ?? 'value')}:${takesFile(o) ? '_files' : ' '}` : ''}'`,
    );
    return `    ${c.name}) _arguments ${[...specs, "'--help[show this command'\\''s help]'", "'*:argument: '"].join(' ')} ;;`;
  });
  return `#compdef thymos
# thymos completion for zsh: thymos completion zsh > "\${fpath[1]}/_thymos", then restart zsh
_thymos() {
  local -a commands
  commands=(
${commands.join('\n')}
  )
  if (( CURRENT == 2 )); then
    _describe 'command' commands
    return
  fi
  words=("\${(@)words[2,-1]}")
  (( CURRENT-- ))
  case "\${words[1]}" in
${cases.join('\n')}
  esac
}
if [[ "\${zsh_eval_context[-1]}" == loadautofunc ]]; then _thymos "$@"; else compdef _thymos thymos; fi
`;
}

/** `thymos completion bash|zsh` */
export function runCompletionCommand(argv: string[]): number {
  const [shell, ...rest] = argv;
  if ((shell !== 'bash' && shell !== 'zsh') || rest.length > 0) {
    throw new ThymosError(
      ErrorCode.USAGE,
      `completion: expected bash or zsh, got ${JSON.stringify(argv.join(' '))}\nusage: thymos completion bash|zsh`,
    );
  }
  process.stdout.write(shell === 'bash' ? bashCompletion() : zshCompletion());
  return 0;
}
