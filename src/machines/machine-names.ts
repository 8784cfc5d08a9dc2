import { randomInt } from 'node:crypto';
import { MachineNameTakenError } from './machine-errors.ts';

/* Short, plain words that read well in either order of a sentence, none of them unkind. */
const ADJECTIVES = `
able agile amber ample apt azure bold brave breezy bright brisk calm candid careful cheerful clever
cosy crisp curious daring dapper deft eager early earnest easy elated epic fair fancy fast fearless
fervent festive fine firm fleet fluent fond frank free fresh friendly gentle giddy glad golden good
graceful grand happy hardy hearty honest humble jolly jovial keen kind lively loyal lucid lucky mellow
merry mighty mild modest neat nimble noble patient peaceful perky placid plucky polite proud quick
quiet radiant rapid ready regal robust rosy rustic sage serene sharp shiny silent silver simple sleek
smart smooth snug solid spry stable steady stoic sturdy sunny super swift tender tidy tranquil trusty
upbeat valiant vivid warm wise witty zealous zesty
`
  .trim()
  .split(/\s+/);

const NOUNS = `
alder apple aspen badger beaver birch bison bobcat brook buffalo canyon cedar cherry cobra comet condor
coral cougar coyote crane creek cricket cypress dingo dolphin dove eagle egret elk elm falcon fern
ferret finch fir fjord flamingo fox gazelle gecko glacier goose grove gull harbor hare hawk hazel
hedgehog heron hickory horizon ibis iris island jackal jaguar jay juniper kestrel kiwi koala lagoon
lake lark laurel lemur leopard lily linden lion lotus lynx magpie mallard mango maple marlin marten
meadow meerkat mesa mink mole moose moth newt nightjar oak ocelot orca oriole osprey otter owl panda
panther parrot peak pelican penguin pine plover pony poplar puffin puma quail rabbit raven reef
river robin rowan salmon seal sequoia shark sparrow spruce squid starling stork swan tapir
tern thrush tiger toucan trout tulip tundra turtle valley viper walnut walrus willow wolf wombat
wren yak zebra
`
  .trim()
  .split(/\s+/);

/** How many plain names there are before a number is added: enough that one is seldom met twice. */
export const PLAIN_NAMES = ADJECTIVES.length * NOUNS.length;

/**
 * A new machine's name, adjective-noun as docker names containers (`brave-otter`): one that
 * `taken` does not hold. When a few draws all meet taken names, a number is added (`brave-otter-2`).
 */
export function newMachineName(taken: (name: string) => boolean): string {
  const draw = () => `${ADJECTIVES[randomInt(ADJECTIVES.length)]}-${NOUNS[randomInt(NOUNS.length)]}`;
  for (let tries = 0; tries < 20; tries++) {
    const name = draw();
    if (!taken(name)) return name;
  }
  const base = draw();
  for (let n = 2; ; n++) if (!taken(`${base}-${n}`)) return `${base}-${n}`;
}

/**
 * The names of machines being made: each held from the moment it is chosen until its machine is
 * made (or not), so that machines made at once never share one. A name asked for is given unless
 * a machine has it (`exists`); a chosen one is also none a deleted machine had (`used`), and in a
 * cluster none any other node's machine has or had (`usedElsewhere`).
 */
export class NameClaims {
  readonly #held = new Set<string>();

  constructor(
    private readonly exists: (name: string) => boolean,
    private readonly used: (name: string) => boolean,
    private readonly usedElsewhere: (name: string) => Promise<boolean>,
  ) {}

  /** Runs `make` with the name asked for, or a readable one chosen, held meanwhile; a name taken is a MachineNameTakenError. */
  async named<T>(wanted: string | undefined, make: (name: string) => Promise<T>): Promise<T> {
    const held = (name: string) => this.#held.has(name) || this.exists(name);
    const choose = () => newMachineName((candidate) => held(candidate) || this.used(candidate));
    if (wanted !== undefined && held(wanted)) throw new MachineNameTakenError(wanted);
    let name = wanted ?? choose();
    this.#held.add(name);
    try {
      // Chosen again, a few times, while the name is another node's: taken ones are few.
      for (let attempt = 1; await this.usedElsewhere(name); attempt++) {
        if (wanted !== undefined || attempt === 8) throw new MachineNameTakenError(name);
        this.#held.delete(name);
        name = choose();
        this.#held.add(name);
      }
      return await make(name);
    } finally {
      this.#held.delete(name);
    }
  }
}

/**
 * The name among `names` that `wanted` was most likely meant to be, as git's "did you mean":
 * the only one it begins, else the nearest by edits (a letter added, dropped, changed or two
 * swapped), if near enough to be a slip rather than another name.
 */
export function nearestName(wanted: string, names: Iterable<string>): string | undefined {
  const all = [...names];
  const lower = wanted.toLowerCase();
  const starting = all.filter((name) => name.toLowerCase().startsWith(lower));
  if (lower.length >= 3 && starting.length === 1) return starting[0];
  const limit = Math.max(1, Math.floor(wanted.length / 4));
  let best: { name: string; distance: number } | undefined;
  for (const name of all) {
    const distance = editDistance(lower, name.toLowerCase());
    if (distance <= limit && (!best || distance < best.distance)) best = { name, distance };
  }
  return best?.name;
}

/** Optimal string alignment distance: insertions, deletions, substitutions and adjacent swaps. */
function editDistance(a: string, b: string): number {
  const rows = Array.from({ length: a.length + 1 }, (_, i) => [i, ...new Array<number>(b.length).fill(0)]);
  for (let j = 1; j <= b.length; j++) rows[0]![j] = j;
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let d = Math.min(rows[i - 1]![j]! + 1, rows[i]![j - 1]! + 1, rows[i - 1]![j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) d = Math.min(d, rows[i - 2]![j - 2]! + 1);
      rows[i]![j] = d;
    }
  }
  return rows[a.length]![b.length]!;
}
