import type { EngineName } from '../../src/shared/requests.ts';

/**
 * One kind of state a REPL user builds up. `setup` runs as separate instructions; after the
 * machine went through two swaps, `check` must give `expected`. A kind an engine cannot keep is
 * `lost` there: it must be named in `data.lost` of the first result after the swap, and `check`
 * then says what is left.
 */
export interface StateKind {
  kind: string;
  setup: string[];
  check: string;
  /** What `check` gives, or per engine where they differ. */
  expected: string | Partial<Record<EngineName, string>>;
  /** Engines that cannot keep it, with the names they must report lost (and no longer have). */
  lost?: Partial<Record<EngineName, string[]>>;
  /** Names an engine brings back as a copy of memory they shared: reported lost, yet still there. */
  copied?: Partial<Record<EngineName, string[]>>;
  /**
   * Only on one engine: where it can be built (numpy and pandas are on the test interpreter, not
   * in Pyodide), or whose format it is there to test (which on the other would only make fixtures larger).
   */
  only?: EngineName;
}

export const KINDS: StateKind[] = [
  { kind: 'module-level counter changed after its definition', setup: ['k_count = 0', 'k_count += 5'], check: 'k_count', expected: '5' },
  {
    kind: 'numbers (big int, float, inf, complex, bool, None)',
    setup: ['k_numbers = (2**100, 1.5, float("inf"), 2+3j, True, None)'],
    check: 'k_numbers',
    expected: '(1267650600228229401496703205376, 1.5, inf, (2+3j), True, None)',
  },
  { kind: 'unicode text', setup: [String.raw`k_text = "héllo ✓\n"`], check: 'k_text', expected: String.raw`'héllo ✓\n'` },
  {
    kind: 'bytes and bytearray',
    setup: [String.raw`k_bytes = (b"\x00\xff", bytearray(b"ab"))`],
    check: 'k_bytes',
    expected: String.raw`(b'\x00\xff', bytearray(b'ab'))`,
  },
  {
    // A sandbox image stores memory that does not compress raw (image format 3), and its sandbox
    // reads it from the file: at least one whole MiB of it, wherever it lies.
    kind: 'bytes that do not compress (2 MiB, random)',
    setup: ['k_noise = __import__("random").Random(7).randbytes(2 << 20)'],
    check: '(len(k_noise), __import__("hashlib").sha256(k_noise).hexdigest()[:16])',
    expected: "(2097152, '26649717d226f4ae')",
    only: 'sandbox',
  },
  {
    kind: 'nested containers with tuple keys',
    setup: ['k_nested = {"a": [1, {"b": (2, 3)}], (1, 2): "tuple key"}'],
    check: 'k_nested',
    expected: "{'a': [1, {'b': (2, 3)}], (1, 2): 'tuple key'}",
  },
  { kind: 'set and frozenset', setup: ['k_sets = ({3, 1, 2}, frozenset({"x"}))'], check: 'k_sets', expected: "({1, 2, 3}, frozenset({'x'}))" },
  { kind: 'recursive list', setup: ['k_loop = [1]\nk_loop.append(k_loop)'], check: '(k_loop[1] is k_loop, k_loop[0])', expected: '(True, 1)' },
  {
    kind: 'one object in several variables',
    setup: ['k_shared = [1, 2]\nk_holder = {"s": k_shared}\nk_both = [k_shared, k_shared]'],
    check: '(k_holder["s"] is k_shared, k_both[0] is k_both[1] is k_shared)',
    expected: '(True, True)',
  },
  { kind: 'alias of a dict', setup: ['k_alias_a = {"n": 1}\nk_alias_b = k_alias_a'], check: 'k_alias_a is k_alias_b', expected: 'True' },
  {
    kind: 'function with defaults, keyword-only defaults, annotations, attributes',
    setup: ['def k_func(a: int, b=2, *, c=3) -> int:\n    "adds"\n    return a + b + c\nk_func.tag = "t"'],
    check: '(k_func(1), k_func(1, c=0), k_func.__doc__, k_func.tag, k_func.__annotations__["a"])',
    expected: "(6, 3, 'adds', 't', <class 'int'>)",
  },
  { kind: 'lambda', setup: ['k_triple = lambda v: v * 3'], check: 'k_triple(4)', expected: '12' },
  {
    kind: 'nested closures with nonlocal state',
    setup: [
      'def k_make_counter():\n    count = 0\n    def outer():\n        def inner():\n            nonlocal count\n            count += 1\n            return count\n        return inner\n    return outer()',
      'k_counter = k_make_counter()\nk_counter()\nk_counter()',
    ],
    check: 'k_counter()',
    expected: '3',
  },
  { kind: 'recursive function', setup: ['def k_fact(n):\n    return 1 if n <= 1 else n * k_fact(n - 1)'], check: 'k_fact(5)', expected: '120' },
  { kind: 'function kept in a container', setup: ['k_handlers = [k_fact]'], check: 'k_handlers[0] is k_fact', expected: 'True' },
  {
    kind: 'class with class attribute, property, staticmethod, classmethod',
    setup: [
      'class KShape:\n    sides = 0\n    def __init__(self, size):\n        self.size = size\n    @property\n    def double(self):\n        return self.size * 2\n    @staticmethod\n    def unit():\n        return KShape(1)\n    @classmethod\n    def named(cls):\n        return cls.__name__\n    def __repr__(self):\n        return f"KShape({self.size})"\nk_shape = KShape(5)',
    ],
    check: '(k_shape, k_shape.double, KShape.unit(), KShape.named(), type(k_shape) is KShape)',
    expected: "(KShape(5), 10, KShape(1), 'KShape', True)",
  },
  {
    kind: 'subclass calling super()',
    setup: [
      'class KSquare(KShape):\n    sides = 4\n    def __init__(self, size):\n        super().__init__(size)\n        self.area = size * size\nk_square = KSquare(3)',
    ],
    check: '(k_square.area, k_square.double, k_square.sides, isinstance(k_square, KShape))',
    expected: '(9, 6, 4, True)',
  },
  {
    kind: 'class with __slots__',
    setup: ['class KSlotted:\n    __slots__ = ("x", "y")\n    def __init__(self):\n        self.x, self.y = 1, 2\nk_slotted = KSlotted()'],
    check: '(k_slotted.x, k_slotted.y, hasattr(k_slotted, "__dict__"))',
    expected: '(1, 2, False)',
  },
  {
    kind: 'dataclass with a default factory and ordering',
    setup: [
      'from dataclasses import dataclass, field\n@dataclass(order=True)\nclass KItem:\n    name: str\n    tags: list = field(default_factory=list)\nk_item = KItem("pen", ["blue"])',
    ],
    check: '(k_item, KItem("a") < KItem("b"), KItem("x").tags)',
    expected: "(KItem(name='pen', tags=['blue']), True, [])",
  },
  {
    kind: 'frozen dataclass used as a dict key',
    setup: ['@dataclass(frozen=True)\nclass KPoint:\n    x: int\n    y: int\nk_point = KPoint(1, 2)\nk_index = {k_point: "here"}'],
    check: '(k_point, k_index[KPoint(1, 2)])',
    expected: "(KPoint(x=1, y=2), 'here')",
  },
  {
    kind: 'collections.namedtuple',
    setup: ['from collections import namedtuple\nKPair = namedtuple("KPair", "a b")\nk_pair = KPair(1, b=2)'],
    check: '(k_pair, k_pair._asdict(), k_pair.b)',
    expected: "(KPair(a=1, b=2), {'a': 1, 'b': 2}, 2)",
  },
  {
    kind: 'typing.NamedTuple with a default',
    setup: ['from typing import NamedTuple\nclass KRow(NamedTuple):\n    id: int\n    label: str = "x"\nk_row = KRow(1)'],
    check: 'k_row',
    expected: "KRow(id=1, label='x')",
  },
  {
    kind: 'Enum class and a member of it',
    setup: ['import enum\nclass KColor(enum.Enum):\n    RED = 1\n    GREEN = 2\n    CRIMSON = 1\nk_color = KColor.RED'],
    check: '(k_color, k_color is KColor.RED, KColor(2), list(KColor), KColor.CRIMSON is KColor.RED)',
    expected: '(<KColor.RED: 1>, True, <KColor.GREEN: 2>, [<KColor.RED: 1>, <KColor.GREEN: 2>], True)',
  },
  {
    kind: 'IntEnum and Flag',
    setup: ['class KLevel(enum.IntEnum):\n    LOW = 1\n    HIGH = 2\nclass KPerm(enum.Flag):\n    R = 4\n    W = 2\n    X = 1\nk_perm = KPerm.R | KPerm.W'],
    check: '(KLevel.HIGH > KLevel.LOW, KLevel.HIGH + 1, k_perm == KPerm.R | KPerm.W, KPerm.R in k_perm, KPerm.X in k_perm)',
    expected: '(True, 3, True, True, False)',
  },
  {
    kind: 'Enum with __init__, methods and member attributes',
    setup: [
      'class KPlanet(enum.Enum):\n    EARTH = (5.97e24, 6.37e6)\n    def __init__(self, mass, radius):\n        self.mass, self.radius = mass, radius\n    def gravity(self):\n        return round(6.67e-11 * self.mass / self.radius ** 2, 1)\nk_planet = KPlanet.EARTH',
    ],
    check: '(k_planet.gravity(), k_planet.radius, k_planet is KPlanet.EARTH)',
    expected: '(9.8, 6370000.0, True)',
  },
  {
    kind: 'defaultdict with a lambda factory',
    setup: ['from collections import defaultdict\nk_dd = defaultdict(lambda: "missing")\nk_dd["a"] = "x"'],
    check: '(k_dd["a"], k_dd["new"], sorted(k_dd))',
    expected: "('x', 'missing', ['a', 'new'])",
  },
  {
    kind: 'defaultdict(list)',
    setup: ['k_groups = defaultdict(list)\nk_groups["a"].append(1)'],
    check: '(dict(k_groups), k_groups["b"])',
    expected: "({'a': [1]}, [])",
  },
  {
    kind: 'OrderedDict order',
    setup: ['from collections import OrderedDict\nk_od = OrderedDict(a=1, b=2)\nk_od.move_to_end("a")'],
    check: 'list(k_od)',
    expected: "['b', 'a']",
  },
  {
    kind: 'Counter',
    setup: ['from collections import Counter\nk_letters = Counter("mississippi")'],
    check: 'k_letters.most_common(2)',
    expected: "[('i', 4), ('s', 4)]",
  },
  {
    kind: 'deque with maxlen',
    setup: ['from collections import deque\nk_deque = deque([1, 2, 3], maxlen=3)\nk_deque.append(4)'],
    check: 'k_deque',
    expected: 'deque([2, 3, 4], maxlen=3)',
  },
  {
    kind: 'ChainMap',
    setup: ['from collections import ChainMap\nk_chain = ChainMap({"a": 1}, {"a": 2, "b": 3})'],
    check: '(k_chain["a"], k_chain["b"], len(k_chain.maps))',
    expected: '(1, 3, 2)',
  },
  {
    kind: 'functools.partial of a REPL function',
    setup: ['import functools\nk_partial = functools.partial(k_func, c=10)'],
    check: '(k_partial(1), k_partial.func is k_func)',
    expected: '(13, True)',
  },
  {
    kind: 're pattern with flags',
    setup: [
      String.raw`import re
k_re = re.compile(r"(\w+)@(\w+)\.com", re.IGNORECASE)`,
    ],
    check: '(k_re.match("Me@Host.COM").groups(), bool(k_re.flags & re.IGNORECASE))',
    expected: "(('Me', 'Host'), True)",
  },
  {
    kind: 'date, aware datetime, timedelta',
    setup: [
      'import datetime as dt\nk_dates = (dt.date(2024, 2, 29), dt.datetime(2024, 1, 2, 3, 4, 5, 6, tzinfo=dt.timezone(dt.timedelta(hours=2))), dt.timedelta(days=1, seconds=5))',
    ],
    check: 'k_dates',
    expected:
      '(datetime.date(2024, 2, 29), datetime.datetime(2024, 1, 2, 3, 4, 5, 6, tzinfo=datetime.timezone(datetime.timedelta(seconds=7200))), datetime.timedelta(days=1, seconds=5))',
  },
  {
    kind: 'Decimal and Fraction',
    setup: ['import decimal, fractions\nk_exact = (decimal.Decimal("1.10") + decimal.Decimal("2.205"), fractions.Fraction(1, 3) * 3 / 4)'],
    check: 'k_exact',
    expected: "(Decimal('3.305'), Fraction(1, 4))",
  },
  {
    kind: 'UUID and a path',
    setup: ['import uuid, pathlib\nk_ids = (uuid.UUID(int=1), pathlib.PurePosixPath("/a/b.txt"))'],
    check: 'k_ids',
    expected: "(UUID('00000000-0000-0000-0000-000000000001'), PurePosixPath('/a/b.txt'))",
  },
  { kind: 'array.array', setup: ['import array\nk_array = array.array("d", [1.5, 2.5])'], check: 'k_array', expected: "array('d', [1.5, 2.5])" },
  { kind: 'range and slice', setup: ['k_ranges = (range(2, 10, 3), slice(1, None, 2))'], check: 'k_ranges', expected: '(range(2, 10, 3), slice(1, None, 2))' },
  {
    kind: 'the global random state',
    setup: ['import random\nrandom.seed(7)\nk_random_state = random.getstate()\nk_random_next = random.random()\nrandom.setstate(k_random_state)'],
    check: 'random.random() == k_random_next',
    expected: 'True',
  },
  {
    kind: 'environment variables a cell set or removed',
    setup: ['import os\nos.environ["K_ENV"] = "set"\nos.environ["K_ENV_GONE"] = "x"', 'del os.environ["K_ENV_GONE"]'],
    check: '(os.environ.get("K_ENV"), "K_ENV_GONE" in os.environ)',
    expected: "('set', False)",
  },
  {
    kind: 'a warnings filter',
    setup: ['import warnings\nwarnings.filterwarnings("ignore", message="k-quiet")'],
    check: 'any(f[1] is not None and f[1].pattern == "k-quiet" for f in warnings.filters)',
    expected: 'True',
  },
  {
    kind: 'an object that looks up a REPL function while it loads (as a formula model does)',
    setup: [
      'def k_scale():\n    return 5\nclass KFormula:\n    def __init__(self):\n        self.value = k_scale()\n    def __setstate__(self, state):\n        self.value = globals()["k_scale"]()\nk_formula = KFormula()',
    ],
    check: 'k_formula.value',
    expected: '5',
  },
  {
    kind: 'an object that looks for a REPL name in the frames it is loaded from (as statsmodels evaluates a formula)',
    setup: [
      'import sys\nclass KFrames:\n    def __init__(self):\n        self.found = "k_scale" in globals()\n    def __setstate__(self, state):\n        frame, self.found = sys._getframe(1), False\n        for _ in range(4):\n            if frame is None:\n                break\n            self.found = self.found or "k_scale" in frame.f_globals\n            frame = frame.f_back\nk_frames = KFrames()',
    ],
    check: 'k_frames.found',
    expected: 'True',
  },
  {
    kind: 'an instance whose class refuses pickling "for now" (NotImplementedError, as patsy\'s)',
    setup: [
      'class KRefuses:\n    def __init__(self):\n        self.matrix, self.names = [[1, 0], [0, 1]], ["a", "b"]\n    def __getstate__(self):\n        raise NotImplementedError("Sorry, pickling not yet supported")\nk_refuses = KRefuses()',
    ],
    check: '(k_refuses.matrix, k_refuses.names, type(k_refuses).__name__)',
    expected: "([[1, 0], [0, 1]], ['a', 'b'], 'KRefuses')",
  },
  {
    kind: 'class with __getstate__ and __setstate__',
    setup: [
      'class KTagged:\n    def __init__(self):\n        self.tags = {"b", "a"}\n    def __getstate__(self):\n        return {"tags": sorted(self.tags)}\n    def __setstate__(self, state):\n        self.tags = set(state["tags"])\nk_tagged = KTagged()',
    ],
    check: 'sorted(k_tagged.tags)',
    expected: "['a', 'b']",
  },
  {
    kind: 'exception instance',
    setup: ['k_error = ValueError("bad", 42)'],
    check: '(type(k_error).__name__, k_error.args)',
    expected: "('ValueError', ('bad', 42))",
  },
  {
    kind: 'abstract base class and an implementation',
    setup: [
      'import abc\nclass KBase(abc.ABC):\n    @abc.abstractmethod\n    def go(self): ...\nclass KImpl(KBase):\n    def go(self):\n        return "went"\nk_impl = KImpl()',
    ],
    check: '(k_impl.go(), isinstance(k_impl, KBase), sorted(KBase.__abstractmethods__))',
    expected: "('went', True, ['go'])",
  },
  {
    kind: 'REPL metaclass',
    setup: ['class KMeta(type):\n    def describe(cls):\n        return "meta:" + cls.__name__\nclass KWithMeta(metaclass=KMeta):\n    pass'],
    check: 'KWithMeta.describe()',
    expected: "'meta:KWithMeta'",
  },
  {
    kind: 'instances that refer to each other',
    setup: [
      'class KNode:\n    def __init__(self, name):\n        self.name, self.peer = name, None\nk_a = KNode("a")\nk_b = KNode("b")\nk_a.peer = k_b\nk_b.peer = k_a',
    ],
    check: '(k_a.peer is k_b, k_b.peer is k_a, k_a.peer.peer.name)',
    expected: "(True, True, 'a')",
  },
  {
    kind: 'object holding a lock, and a queue with an item',
    setup: [
      'import threading, queue\nclass KGuarded:\n    def __init__(self):\n        self.lock = threading.Lock()\n        self.items = [1]\nk_guarded = KGuarded()\nk_queue = queue.Queue()\nk_queue.put("job")',
    ],
    check: '(k_guarded.items, k_guarded.lock.acquire(blocking=False), k_queue.get_nowait())',
    expected: "([1], True, 'job')",
  },
  { kind: 'a held lock', setup: ['k_held = threading.Lock()\nk_held.acquire()'], check: 'k_held.locked()', expected: 'True' },
  {
    kind: 'in-memory text stream with its position',
    setup: [
      String.raw`import io
k_buffer = io.StringIO("line1\nline2")
k_buffer.readline()`,
    ],
    check: 'k_buffer.read()',
    expected: "'line2'",
  },
  {
    kind: 'imported modules under other names',
    setup: ['import json as k_json\nfrom os import path as k_path'],
    check: '(k_json.dumps([1]), k_path.join("a", "b"))',
    expected: "('[1]', 'a/b')",
  },
  {
    kind: "a file in the machine's folder",
    setup: ['with open("k_notes.txt", "w") as k_out:\n    k_out.write("kept on disk")'],
    check: '(open("k_notes.txt").read(), k_out.closed, k_out.name)',
    expected: "('kept on disk', True, 'k_notes.txt')",
  },
  {
    kind: 'generator half-way through',
    setup: ['def k_numbers_from(n):\n    yield from range(n, n + 10)\nk_gen = k_numbers_from(0)\nnext(k_gen), next(k_gen)'],
    check: 'next(k_gen) if "k_gen" in globals() else next(k_numbers_from(5))',
    expected: { sandbox: '2', python: '5' },
    lost: { python: ['k_gen'] },
  },
  {
    kind: 'open file',
    setup: ['k_file = open("k_open.txt", "w+")\nk_file.write("written, never flushed")'],
    check: 'open("k_open.txt").read()',
    expected: "'written, never flushed'",
    lost: { python: ['k_file'], sandbox: ['k_file'] },
  },
  {
    kind: 'socket',
    only: 'python',
    setup: ['import socket\nk_socket = socket.socket()'],
    check: 'socket.AF_INET.name',
    expected: "'AF_INET'",
    lost: { python: ['k_socket'] },
  },
  {
    kind: 'running thread',
    only: 'python',
    setup: ['k_stop = threading.Event()\nk_thread = threading.Thread(target=k_stop.wait, daemon=True)\nk_thread.start()'],
    check: 'k_stop.is_set()',
    expected: 'False',
    lost: { python: ['k_thread'] },
  },
  {
    kind: 'numpy array',
    only: 'python',
    setup: ['import numpy as np\nk_matrix = np.arange(6, dtype=np.int32).reshape(2, 3)'],
    check: '(k_matrix.tolist(), str(k_matrix.dtype))',
    expected: "([[0, 1, 2], [3, 4, 5]], 'int32')",
  },
  {
    kind: 'numpy views of one base, one of them reversed and strided',
    only: 'python',
    setup: ['k_x2 = np.arange(12).reshape(3, 4)\nk_x2_sub = k_x2[:2, :2]\nk_x2_rev = k_x2[::-1, ::2]'],
    check: 'k_x2_sub[0, 0] = 99\n(int(k_x2[0, 0]), int(k_x2_rev[2, 0]), bool(np.shares_memory(k_x2_sub, k_x2_rev)))',
    expected: '(99, 99, True)',
  },
  {
    kind: 'a memory-mapped array and a view of it',
    only: 'python',
    setup: ['k_map = np.memmap("k_map.dat", dtype="int16", mode="w+", shape=(4,))\nk_map[:] = [1, 2, 3, 4]\nk_map_part = k_map[1:3]'],
    check: 'k_map_part[0] = 20\nk_map.flush()\n(type(k_map).__name__, np.fromfile("k_map.dat", dtype="int16").tolist())',
    expected: "('memmap', [1, 20, 3, 4])",
  },
  {
    kind: 'an array on a bytearray',
    only: 'python',
    setup: ['k_bytes_buffer = bytearray(8)\nk_on_bytes = np.frombuffer(k_bytes_buffer, dtype=np.int16)'],
    check: 'k_on_bytes[1] = 258\nbytes(k_bytes_buffer[2:4])',
    expected: String.raw`b'\x02\x01'`,
  },
  {
    kind: "an array on memory a snapshot cannot keep (an anonymous mmap's)",
    only: 'python',
    setup: ['import mmap\nk_mmap = mmap.mmap(-1, 8)\nk_on_mmap = np.frombuffer(k_mmap, dtype=np.uint8)\nk_on_mmap_part = k_on_mmap[2:]'],
    check: 'k_on_mmap[2] = 5\n(int(k_on_mmap_part[0]), "k_mmap" in globals())',
    expected: '(5, False)',
    lost: { python: ['k_mmap'] },
    copied: { python: ['k_on_mmap', 'k_on_mmap_part'] },
  },
  {
    kind: 'the numpy random state',
    only: 'python',
    setup: ['np.random.seed(5)\nk_np_state = np.random.get_state()\nk_np_next = np.random.rand()\nnp.random.set_state(k_np_state)'],
    check: 'np.random.rand() == k_np_next',
    expected: 'True',
  },
  {
    kind: "numpy's print and floating-point error settings",
    only: 'python',
    setup: ['np.set_printoptions(precision=3)\nnp.seterr(divide="raise")'],
    check: '(repr(np.array([1 / 3])), np.geterr()["divide"])',
    expected: "('array([0.333])', 'raise')",
  },
  {
    kind: "matplotlib's rcParams (a style a cell set)",
    only: 'python',
    setup: ['import matplotlib\nmatplotlib.rcParams["lines.linewidth"] = 3.5'],
    check: 'matplotlib.rcParams["lines.linewidth"]',
    expected: '3.5',
  },
  {
    kind: 'pandas DataFrame',
    only: 'python',
    setup: ['import pandas as pd\nk_frame = pd.DataFrame({"a": [1, 2], "b": ["x", "y"]})'],
    check: '(k_frame.shape, int(k_frame["a"].sum()), list(k_frame.columns), k_frame.loc[1, "b"])',
    expected: "((2, 2), 3, ['a', 'b'], 'y')",
  },
  {
    kind: "pandas' options",
    only: 'python',
    setup: ['pd.set_option("display.max_rows", 7)'],
    check: 'pd.get_option("display.max_rows")',
    expected: '7',
  },
  {
    kind: 'pandas frame sharing a numpy block with a variable',
    only: 'python',
    setup: ['k_block = np.zeros((3, 2))\nk_frame_view = pd.DataFrame(k_block, columns=["a", "b"], copy=False)\nk_column = k_frame_view["a"]'],
    check: 'k_block[1, 0] = 7\n(float(k_frame_view.loc[1, "a"]), float(k_column[1]))',
    expected: '(7.0, 7.0)',
  },
];

/** The kinds an engine can build. */
export function kindsFor(engine: EngineName): StateKind[] {
  return KINDS.filter((k) => !k.only || k.only === engine);
}

/** What `check` gives on `engine`. */
export function expectedOn(kind: StateKind, engine: EngineName): string | undefined {
  return typeof kind.expected === 'string' ? kind.expected : kind.expected[engine];
}
