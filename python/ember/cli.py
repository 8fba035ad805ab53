"""The ``ember`` command line (also ``python -m ember``); docs/cli.md describes every option.

Commands::

    ember cache info                   what the kernel cache holds, by category
    ember cache clear [--yes]          empty it
    ember cache prune --max-size 2G    evict the least recently used entries down to a size
    ember compile MODEL.onnx -o OUT.ember [--search-space N] [--dynamic]
                  [--input-shape NAME=1x3x224x224 ...]
    ember run OUT.ember --inputs a.npy b.npy [--output-dir DIR]
    ember bench OUT.ember [--threads N] [--runs N] [--warmup N] [--inputs ...]
                [--shape SYMBOL=VALUE ...] [--input-shape NAME=AxB ...]
    ember info OUT.ember

Exit status:

    0    success
    1    an error while working (ember.EmberError or another runtime error): its message on
         stderr, with the traceback only under --verbose
    2    a usage error: unknown command or option, a malformed value, a missing confirmation
    3    an input file that is missing, unreadable or damaged (a model, an .ember artifact,
         an .npy input)
    4    a model ember does not support (an ONNX operator it cannot import)
    130  interrupted (Ctrl-C)
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import time
import traceback
from collections.abc import Sequence
from typing import Any, NoReturn

import numpy as np

EXIT_OK = 0
EXIT_ERROR = 1
EXIT_USAGE = 2
EXIT_INPUT = 3
EXIT_UNSUPPORTED = 4
EXIT_INTERRUPTED = 130


class CliError(Exception):
    """An error that ends the command with `code` and `message` on stderr."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code


def _usage(message: str) -> NoReturn:
    raise CliError(EXIT_USAGE, message)


# ---------------------------------------------------------------------------------------------
# Formatting and parsing.


def format_bytes(n: int | None) -> str:
    """``1536`` -> ``'1.5 KiB'`` (powers of 1024, as sizes are parsed)."""
    if n is None:
        return "-"
    value = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(value) < 1024 or unit == "TiB":
            return f"{int(value)} B" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    raise AssertionError("unreachable")


def format_shape(shape: Sequence[int | str]) -> str:
    return "(" + ", ".join(str(d) for d in shape) + ("," if len(shape) == 1 else "") + ")"


def _table(header: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    cells = [list(map(str, header))] + [[str(c) for c in row] for row in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(header))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip()
             for row in cells]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def parse_size(text: str, option: str) -> int:
    """Bytes in ``text`` (``500M``, ``2G``), read as ember reads EMBER_CACHE_MAX_SIZE."""
    import ember

    try:
        return int(ember._C.parse_size(text, option))
    except ember.EmberError as e:
        _usage(str(e))


def parse_assignments(items: Sequence[str] | None, option: str, scalar: bool) -> dict[str, Any]:
    """``["x=1x3x224x224"]`` -> ``{"x": (1, 3, 224, 224)}``; with `scalar`, ``["n=4"]`` ->
    ``{"n": 4}``."""
    out: dict[str, Any] = {}
    for item in items or ():
        name, sep, text = item.partition("=")
        ok = bool(sep and name)
        try:
            dims = tuple(int(d) for d in text.lower().split("x")) if ok else ()
        except ValueError:
            ok = False
        if ok and scalar:
            ok = len(dims) == 1
        if not ok or any(d < 0 for d in dims):
            example = "n=8" if scalar else "x=1x3x224x224"
            _usage(f"{option} takes NAME=VALUE with non-negative integers, such as {example}; "
                   f"got {item!r}")
        out[name] = dims[0] if scalar else dims
    return out


# ---------------------------------------------------------------------------------------------
# Files and models.


def _check_readable(path: str, what: str) -> None:
    if not os.path.exists(path):
        raise CliError(EXIT_INPUT, f"{what} {path!r} does not exist")
    if os.path.isdir(path):
        raise CliError(EXIT_INPUT, f"{what} {path!r} is a directory, not a file")
    if not os.access(path, os.R_OK):
        raise CliError(EXIT_INPUT, f"{what} {path!r} cannot be read (permission denied)")


def load_model(path: str) -> Any:
    """The ember.CompiledModel saved in `path`; a missing or damaged file is exit status 3."""
    import ember

    _check_readable(path, "the compiled model")
    artifact_error = getattr(ember, "ArtifactError", None)
    try:
        return ember.load(path)
    except OSError as e:
        raise CliError(EXIT_INPUT, f"cannot read the compiled model {path!r}: {e}") from e
    except Exception as e:
        if artifact_error is not None and isinstance(e, artifact_error):
            raise CliError(EXIT_INPUT, f"{path}: {e}") from e
        raise


def load_inputs(paths: Sequence[str], model: Any) -> list[np.ndarray]:
    """The arrays of the .npy files `paths`, one per input of `model`."""
    names = [spec.name for spec in model.inputs]
    if len(paths) != len(names):
        _usage(f"the model takes {len(names)} input(s) ({', '.join(names)}), "
               f"but --inputs gives {len(paths)}")
    arrays = []
    for path in paths:
        _check_readable(path, "the input")
        try:
            arrays.append(np.load(path, allow_pickle=False))
        except (ValueError, OSError, EOFError) as e:
            raise CliError(EXIT_INPUT, f"cannot read the input {path!r} as a .npy array: {e}") \
                from e
    return arrays


def concrete_shape(spec: Any, symbols: dict[str, int],
                   shapes: dict[str, tuple[int, ...]]) -> tuple[int, ...]:
    """The shape of input `spec` with its symbolic sizes given by --shape or --input-shape."""
    if spec.name in shapes:
        return shapes[spec.name]
    dims = []
    for d in spec.shape:
        if isinstance(d, int):
            dims.append(d)
        elif d in symbols:
            dims.append(symbols[d])
        else:
            _usage(f"input {spec.name!r} has the symbolic shape {format_shape(spec.shape)}: "
                   f"give its size with --shape {d}=VALUE (or the whole shape with "
                   f"--input-shape {spec.name}=AxB...)")
    return tuple(dims)


def random_input(shape: tuple[int, ...], dtype: str, rng: np.random.Generator) -> np.ndarray:
    """Random data of `shape` and `dtype`: normal floats, integers in [0, 10), random bools."""
    dt = np.dtype(dtype)
    if dt.kind == "f":
        return rng.standard_normal(shape).astype(dt)
    if dt.kind in "iu":
        return rng.integers(0, 10, size=shape).astype(dt)
    if dt.kind == "b":
        return rng.random(shape) < 0.5
    raise CliError(EXIT_ERROR, f"cannot make random inputs of dtype {dtype}; pass --inputs")


def _show_progress(args: argparse.Namespace) -> bool:
    return not args.quiet and sys.stderr.isatty()


def _say(args: argparse.Namespace, message: str) -> None:
    """A note on stderr (what is happening), silenced by --quiet."""
    if not args.quiet:
        print(message, file=sys.stderr)


# ---------------------------------------------------------------------------------------------
# Commands.


def cmd_cache_info(args: argparse.Namespace) -> int:
    import ember

    usage = ember.cache_usage()
    if args.json:
        print(json.dumps({"dir": usage.dir, "total_bytes": usage.total_bytes,
                          "categories": {c.name: {"entries": c.entries, "bytes": c.bytes}
                                         for c in usage.categories}}, indent=2))
        return EXIT_OK
    rows: list[list[object]] = [[c.name, c.entries, format_bytes(c.bytes)]
                                for c in usage.categories]
    rows.append(["total", sum(c.entries for c in usage.categories),
                 format_bytes(usage.total_bytes)])
    print(f"cache directory: {usage.dir}")
    print(_table(["category", "entries", "size"], rows))
    return EXIT_OK


def _report_removed(result: Any) -> None:
    print(f"removed {result.kernels_removed} kernel module(s), {result.pch_removed} "
          f"precompiled header(s), {result.tuning_removed} tuning record(s) and "
          f"{result.temporaries_removed} temporary file(s): {format_bytes(result.bytes_freed)} "
          f"freed, {format_bytes(result.bytes_left)} left")


def cmd_cache_clear(args: argparse.Namespace) -> int:
    import ember

    if not args.yes:
        if not sys.stdin.isatty():
            _usage("ember cache clear asks for confirmation, but standard input is not a "
                   "terminal: pass --yes to clear without asking")
        usage = ember.cache_usage()
        print(f"Remove every kernel module, precompiled header and tuning record in {usage.dir} "
              f"({format_bytes(usage.total_bytes)})? [y/N] ", end="", file=sys.stderr, flush=True)
        answer = sys.stdin.readline().strip().lower()
        if answer not in ("y", "yes"):
            print("nothing removed")
            return EXIT_OK
    _report_removed(ember.clear_cache())
    return EXIT_OK


def cmd_cache_prune(args: argparse.Namespace) -> int:
    import ember

    _report_removed(ember.prune_cache(parse_size(args.max_size, "--max-size")))
    return EXIT_OK


def cmd_compile(args: argparse.Namespace) -> int:
    import ember

    _check_readable(args.model, "the model")
    if not args.model.lower().endswith(".onnx"):
        _usage(f"ember compile takes an ONNX file (.onnx), got {args.model!r}")
    options: dict[str, Any] = {"search_space": args.search_space,
                               "progress": _show_progress(args)}
    shapes = parse_assignments(args.input_shape, "--input-shape", False)
    if shapes:
        options["shapes"] = {name: list(dims) for name, dims in shapes.items()}
    start = time.perf_counter()
    model = ember.compile(args.model, dynamic=True if args.dynamic else None, options=options)
    model.save(args.output)
    _say(args, f"compiled {args.model} in {time.perf_counter() - start:.1f} s")
    print(f"wrote {args.output} ({format_bytes(os.path.getsize(args.output))})")
    return EXIT_OK


def _output_paths(model: Any, directory: str) -> list[str]:
    """<name>.npy per output when the names make distinct plain file names, else out_<i>.npy."""
    names = [spec.name for spec in model.outputs]
    plain = all(re.fullmatch(r"[A-Za-z0-9_][A-Za-z0-9_.-]*", n or "") for n in names)
    if not plain or len(set(names)) != len(names):
        names = [f"out_{i}" for i in range(len(names))]
    return [os.path.join(directory, f"{n}.npy") for n in names]


def cmd_run(args: argparse.Namespace) -> int:
    model = load_model(args.model)
    inputs = load_inputs(args.inputs, model)
    outputs = model.run(inputs)
    os.makedirs(args.output_dir, exist_ok=True)
    for spec, array, path in zip(model.outputs, outputs,
                                 _output_paths(model, args.output_dir), strict=True):
        np.save(path, np.asarray(array))
        print(f"{spec.name}: shape {format_shape(np.shape(array))} {np.asarray(array).dtype} "
              f"-> {path}")
    return EXIT_OK


def cmd_bench(args: argparse.Namespace) -> int:
    model = load_model(args.model)
    if args.threads is not None:
        model.set_num_threads(args.threads)
    if args.inputs:
        inputs = load_inputs(args.inputs, model)
    else:
        symbols = parse_assignments(args.shape, "--shape", True)
        shapes = parse_assignments(args.input_shape, "--input-shape", False)
        rng = np.random.default_rng(0)
        inputs = [random_input(concrete_shape(spec, symbols, shapes), spec.dtype, rng)
                  for spec in model.inputs]
    for _ in range(args.warmup):
        model.run(inputs)
    from tqdm import tqdm

    times = []
    for _ in tqdm(range(args.runs), desc="bench", unit="run", leave=False,
                  disable=not _show_progress(args)):
        start = time.perf_counter()
        model.run(inputs)
        times.append(time.perf_counter() - start)
    ms = np.array(times) * 1e3
    print(f"{args.runs} runs after {args.warmup} warm-up run(s), inputs "
          + ", ".join(format_shape(a.shape) for a in inputs))
    stats = [("min", ms.min()), ("p50", np.percentile(ms, 50)), ("p90", np.percentile(ms, 90)),
             ("p99", np.percentile(ms, 99)), ("max", ms.max())]
    print(_table(["latency", "ms"], [[name, f"{v:.3f}"] for name, v in stats]))
    print(f"throughput: {args.runs / max(sum(times), 1e-12):.1f} runs/s")
    print()
    print(model.profile_table(inputs, runs=args.runs))
    return EXIT_OK


def cmd_info(args: argparse.Namespace) -> int:
    model = load_model(args.model)
    info = dict(model.info())
    if info.get("file_bytes") is None:
        info["file_bytes"] = os.path.getsize(args.model)

    def specs(items: Sequence[Any]) -> list[dict[str, Any]]:
        return [{"name": s.name, "shape": list(s.shape), "dtype": str(s.dtype)} for s in items]

    if args.json:
        print(json.dumps({"inputs": specs(model.inputs), "outputs": specs(model.outputs),
                          **info}, indent=2, default=str))
        return EXIT_OK
    for title, items in (("inputs", model.inputs), ("outputs", model.outputs)):
        print(f"{title}:")
        print(_table(["name", "shape", "dtype"],
                     [[s.name, format_shape(s.shape), s.dtype] for s in items]))
    print()
    symbols = info.get("symbols")
    rows = [["file", args.model], ["file size", format_bytes(info["file_bytes"])],
            ["format version", info.get("format_version")],
            ["ember version", info.get("ember_version")], ["isa", info.get("isa")],
            ["kernels", info.get("kernels")],
            ["weights", format_bytes(info.get("weight_bytes"))],
            ["prepared for the kernels", format_bytes(info.get("prepared_weight_bytes"))],
            ["symbols", ", ".join(map(str, symbols)) if symbols else "none"]]
    print(_table(["", ""], rows).split("\n", 2)[2])  # no header
    return EXIT_OK


# ---------------------------------------------------------------------------------------------
# The parser.


def _at_least(minimum: int) -> Any:
    def parse(text: str) -> int:
        try:
            n = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
        if n < minimum:
            raise argparse.ArgumentTypeError(f"expected an integer >= {minimum}, got {text!r}")
        return n

    return parse


def _add_common(parser: argparse.ArgumentParser, default: Any) -> None:
    parser.add_argument("-v", "--verbose", action="store_true", default=default,
                        help="print the traceback of an error")
    parser.add_argument("-q", "--quiet", action="store_true", default=default,
                        help="no progress bars or notes on stderr")


def build_parser() -> argparse.ArgumentParser:
    # --verbose and --quiet go before or after the command. A command's parser leaves them
    # unset unless given (SUPPRESS), so that it does not reset what the main parser read.
    common = argparse.ArgumentParser(add_help=False)
    _add_common(common, argparse.SUPPRESS)
    parser = argparse.ArgumentParser(
        prog="ember",
        description="ember, a deep-learning compiler: compile ONNX models, run and benchmark "
                    "them, manage the kernel cache.",
        epilog="Exit status: 0 success, 1 error, 2 usage error, 3 input file missing or "
               "damaged, 4 unsupported model, 130 interrupted. See docs/cli.md.")
    _add_common(parser, False)
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")

    cache = commands.add_parser("cache", parents=[common], help="inspect or empty the kernel "
                                "cache", description="The disk cache of compiled kernels "
                                "(EMBER_CACHE_DIR, else ~/.cache/ember).")
    cache_commands = cache.add_subparsers(dest="cache_command", metavar="ACTION")
    p = cache_commands.add_parser("info", parents=[common], help="entries and sizes by category",
                                  description="Entries and sizes of the kernel cache by category "
                                  "(kernels, pch, tuning, tmp), and its directory.")
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")
    p.set_defaults(func=cmd_cache_info, parser=p)
    p = cache_commands.add_parser(
        "clear", parents=[common], help="remove everything ember keeps there",
        description="Remove every kernel module, precompiled header and tuning record (builds "
        "in progress and files that are not ember's stay). Asks first unless --yes; without "
        "--yes and without a terminal to ask on, refuses (exit status 2).")
    p.add_argument("-y", "--yes", action="store_true", help="do not ask for confirmation")
    p.set_defaults(func=cmd_cache_clear, parser=p)
    p = cache_commands.add_parser(
        "prune", parents=[common], help="evict least recently used entries down to a size",
        description="Remove stale temporaries, then the least recently used kernel modules and "
        "precompiled headers until the cache is at most --max-size (tuning records stay).")
    p.add_argument("--max-size", required=True, metavar="SIZE",
                   help="such as 500M or 2G (k, M, G, T: powers of 1024)")
    p.set_defaults(func=cmd_cache_prune, parser=p)

    p = commands.add_parser("compile", parents=[common], help="compile an ONNX model",
                            description="Compile an ONNX model into a .ember file.")
    p.add_argument("model", metavar="MODEL", help="the .onnx file")
    p.add_argument("-o", "--output", required=True, metavar="OUT.ember",
                   help="where to write the compiled model")
    p.add_argument("--search-space", type=_at_least(0), default=0, metavar="N",
                   help="kernel tuning: 0 none (default), 1 a few GEMM blockings, 2 many")
    p.add_argument("--dynamic", action="store_true",
                   help="keep the model's symbolic sizes symbolic (one compiled model for "
                        "every batch size)")
    p.add_argument("--input-shape", action="append", metavar="NAME=AxBx...",
                   help="the shape of input NAME, such as x=1x3x224x224 (repeatable)")
    p.set_defaults(func=cmd_compile, parser=p)

    p = commands.add_parser("run", parents=[common], help="run a compiled model on .npy inputs",
                            description="Run a compiled model on .npy inputs and write its "
                            "outputs as .npy files (<output name>.npy, or out_<i>.npy).")
    p.add_argument("model", metavar="OUT.ember")
    p.add_argument("--inputs", nargs="+", required=True, metavar="X.npy",
                   help="one .npy file per model input, in order")
    p.add_argument("--output-dir", default=".", metavar="DIR",
                   help="where to write the outputs (default: the current directory)")
    p.set_defaults(func=cmd_run, parser=p)

    p = commands.add_parser("bench", parents=[common], help="measure a compiled model's latency",
                            description="Run a compiled model repeatedly: latency min, p50, "
                            "p90, p99, max (ms), throughput, then the time of each kernel.")
    p.add_argument("model", metavar="OUT.ember")
    p.add_argument("--threads", type=_at_least(1), metavar="N", help="threads (default: all)")
    p.add_argument("--runs", type=_at_least(1), default=100, metavar="N",
                   help="timed runs (default 100)")
    p.add_argument("--warmup", type=_at_least(0), default=10, metavar="N",
                   help="untimed runs first (default 10)")
    p.add_argument("--inputs", nargs="+", metavar="X.npy",
                   help="inputs from .npy files (default: random data of the model's shapes)")
    p.add_argument("--shape", action="append", metavar="SYMBOL=VALUE",
                   help="the value of a symbolic size for random inputs, such as batch=8")
    p.add_argument("--input-shape", action="append", metavar="NAME=AxBx...",
                   help="the whole shape of input NAME for random inputs")
    p.set_defaults(func=cmd_bench, parser=p)

    p = commands.add_parser("info", parents=[common], help="describe a compiled model",
                            description="Inputs, outputs, ISA, versions, size, kernels and "
                            "weights of a compiled model.")
    p.add_argument("model", metavar="OUT.ember")
    p.add_argument("--json", action="store_true", help="print JSON instead of tables")
    p.set_defaults(func=cmd_info, parser=p)
    return parser


def _error_code(e: BaseException) -> int:
    """The exit status of an exception raised by ember while a command worked."""
    import ember
    from ember.onnx import InvalidOnnxError, UnsupportedOnnxError  # imports no onnx

    if isinstance(e, UnsupportedOnnxError):
        return EXIT_UNSUPPORTED
    if isinstance(e, (ember.ArtifactError, InvalidOnnxError)):
        return EXIT_INPUT
    if type(e).__name__ == "DecodeError":  # protobuf's: a damaged .onnx file
        return EXIT_INPUT
    return EXIT_ERROR


def main(argv: Sequence[str] | None = None) -> int:
    """Runs the command line `argv` (default sys.argv[1:]) and returns the exit status."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if not hasattr(args, "func"):
        sub = {"cache": "cache "}.get(args.command or "", "")
        parser.print_usage(sys.stderr)
        print(f"ember: error: choose a {'cache action' if sub else 'command'} "
              f"(ember {sub}--help lists them)", file=sys.stderr)
        return EXIT_USAGE
    try:
        return int(args.func(args))
    except KeyboardInterrupt:
        print("ember: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:  # `ember info m.ember | head`: the reader left
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_ERROR
    except CliError as e:
        if args.verbose:
            traceback.print_exc()
        prog = "ember"
        if e.code == EXIT_USAGE:  # as argparse reports its own usage errors
            args.parser.print_usage(sys.stderr)
            prog = args.parser.prog
        print(f"{prog}: error: {e}", file=sys.stderr)
        return e.code
    except Exception as e:
        if args.verbose:
            traceback.print_exc()
        print(f"ember: error: {e}", file=sys.stderr)
        return _error_code(e)


if __name__ == "__main__":
    sys.exit(main())
