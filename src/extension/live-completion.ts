import * as vscode from 'vscode';
import type { ActiveMachine } from './active-machine.ts';
import type { MachineRef, Sources } from './machine-source.ts';
import type { NotebookKernel } from './notebook-kernel.ts';

/** How long an editor waits for the machine: a busy or slow machine gives no answer rather than a late one. */
const ANSWER_MS = 1500;
/** A name or dotted path, as hovered. */
const DOTTED = /[A-Za-z_][\w.]*/;

/**
 * Completions and hovers from the live machine: in a notebook cell from the notebook's machine,
 * in a Python file from the active machine (when one is set, and local). They come after what the Python
 * extension offers from the source, and name what only the running namespace knows.
 */
export function registerLiveCompletion(sources: Sources, active: ActiveMachine, notebooks: NotebookKernel): vscode.Disposable {
  /**
   * The machine a document's code runs in, when it is known and not busy (it would answer late).
   * Local only: hosted ForeverVM has no introspection but an instruction, which every keystroke
   * or hover would add to the machine's history.
   */
  const machineFor = (document: vscode.TextDocument): MachineRef | undefined => {
    const notebook = vscode.workspace.notebookDocuments.find((candidate) => candidate.getCells().some((cell) => cell.document === document));
    const machine = notebook ? notebooks.machineOf(notebook) : active.machine;
    return machine?.source === 'local' && sources.local.get(machine.name)?.state !== 'busy' ? machine : undefined;
  };
  const selector: vscode.DocumentSelector = [
    { language: 'python', notebookType: 'jupyter-notebook' },
    { language: 'python', scheme: 'file' },
    { language: 'python', scheme: 'untitled' },
  ];
  return vscode.Disposable.from(
    vscode.languages.registerCompletionItemProvider(
      selector,
      {
        async provideCompletionItems(document, position) {
          const machine = machineFor(document);
          if (!machine) return undefined;
          const client = await sources[machine.source].client();
          const answer = await inTime(client.complete(machine.name, document.getText(), document.offsetAt(position)));
          if (!answer) return undefined;
          const range = new vscode.Range(document.positionAt(answer.start), position);
          return answer.matches.map((match) => completionItem(match, range));
        },
      },
      '.',
    ),
    vscode.languages.registerHoverProvider(selector, {
      async provideHover(document, position) {
        const machine = machineFor(document);
        const range = document.getWordRangeAtPosition(position, DOTTED);
        if (!machine || !range) return undefined;
        // The path up to the hovered part: over `b` in `a.b.c`, `a.b`.
        const text = document.getText(range);
        const end = text.indexOf('.', document.offsetAt(position) - document.offsetAt(range.start));
        const expression = (end < 0 ? text : text.slice(0, end)).replace(/\.$/, '');
        const client = await sources[machine.source].client();
        const [info, variable] = await Promise.all([
          inTime(client.inspect(machine.name, expression)),
          expression.includes('.') ? undefined : inTime(client.variable(machine.name, expression)),
        ]);
        if (!info) return undefined;
        const hover = new vscode.MarkdownString();
        hover.appendCodeblock(`${expression}${info.signature ?? ''}: ${info.type}`, 'python');
        if (variable) hover.appendCodeblock(variable.repr.length > 200 ? `${variable.repr.slice(0, 200)}…` : variable.repr, 'text');
        if (info.doc) hover.appendText(info.doc.length > 1500 ? `${info.doc.slice(0, 1500)}…` : info.doc);
        hover.appendMarkdown(`\n\n*From Perennial machine ${machine.name}*`);
        return new vscode.Hover(hover, new vscode.Range(range.start, document.positionAt(document.offsetAt(range.start) + expression.length)));
      },
    }),
  );
}

/**
 * A match of the kernel as an item replacing `range`. rlcompleter's marks: a callable ends in "(",
 * a keyword in " " or ":" ("df.columns", "print(", "class ", "else:").
 */
function completionItem(match: string, range: vscode.Range): vscode.CompletionItem {
  const callable = match.endsWith('(');
  const keyword = /[ :]$/.test(match);
  const text = callable || keyword ? match.slice(0, -1) : match;
  const item = new vscode.CompletionItem(
    { label: text.slice(text.lastIndexOf('.') + 1), description: 'Perennial' },
    callable ? vscode.CompletionItemKind.Function : keyword ? vscode.CompletionItemKind.Keyword : vscode.CompletionItemKind.Variable,
  );
  item.insertText = text;
  item.filterText = text;
  item.range = range;
  // After the Python extension's items, which sort by their labels.
  item.sortText = `~${text}`;
  return item;
}

/** The answer, or undefined after ANSWER_MS or on an error (a name the machine does not know). */
async function inTime<T>(answer: Promise<T>): Promise<T | undefined> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([answer, new Promise<undefined>((resolve) => (timer = setTimeout(() => resolve(undefined), ANSWER_MS)))]);
  } catch {
    return undefined;
  } finally {
    clearTimeout(timer);
  }
}
