"""Extract the training corpus: Jane Austen's six novels from Debian's r-cran-janeaustenr.

The package (MIT; the novels themselves are public domain) stores each novel as an R
character vector (one element per line) in R's lazy-load database data/Rdata.rdb, indexed by
data/Rdata.rdx. This module reads that format directly (R's serialisation, XDR version 2/3),
so neither R nor the package's dependencies need to be installed: `apt-get download
r-cran-janeaustenr` and `dpkg-deb -x` are enough (see train.py --help).
"""
import gzip
import os
import re
import struct
import zlib

PACKAGE_DATA = "/usr/lib/R/site-library/janeaustenr/data"
NOVELS = ("sensesensibility", "prideprejudice", "mansfieldpark", "emma",
          "northangerabbey", "persuasion")


class _Reader:
    """Just enough of R's XDR unserialiser for character vectors, lists and pairlists."""

    def __init__(self, data):
        self.d = data
        self.p = 0
        self.refs = []

    def int(self):
        v = struct.unpack_from(">i", self.d, self.p)[0]
        self.p += 4
        return v

    def raw(self, n):
        b = self.d[self.p:self.p + n]
        self.p += n
        return b

    def header(self):
        if self.raw(2) != b"X\n":
            raise ValueError("not an XDR R serialisation")
        version = self.int()
        self.int()
        self.int()
        if version == 3:
            self.raw(self.int())

    def item(self):
        flags = self.int()
        kind = flags & 0xFF
        has_attr = flags & 0x200
        has_tag = flags & 0x400
        if kind == 254:                       # NILVALUE_SXP
            return None
        if kind == 255:                       # REFSXP
            idx = flags >> 8
            if idx == 0:
                idx = self.int()
            return self.refs[idx - 1]
        if kind == 1:                         # SYMSXP
            sym = ("sym", self.item())
            self.refs.append(sym)
            return sym
        if kind == 9:                         # CHARSXP
            n = self.int()
            return None if n == -1 else self.raw(n).decode("utf-8", "replace")
        if kind in (2, 6):                    # LISTSXP / LANGSXP: attr, tag, car, cdr
            out = []
            while True:
                attr = self.item() if has_attr else None
                tag = self.item() if has_tag else None
                out.append((tag, self.item()))
                del attr
                flags = self.int()
                kind = flags & 0xFF
                has_attr = flags & 0x200
                has_tag = flags & 0x400
                if kind == 254:
                    return out
                if kind not in (2, 6):
                    raise ValueError("unsupported pairlist tail %d" % kind)
        if kind in (16, 19, 20):              # STRSXP / VECSXP / EXPRSXP
            n = self.int()
            val = [self.item() for _ in range(n)]
        elif kind in (10, 13):                # LGLSXP / INTSXP
            n = self.int()
            val = list(struct.unpack_from(">%di" % n, self.d, self.p))
            self.p += 4 * n
        elif kind == 14:                      # REALSXP
            n = self.int()
            val = list(struct.unpack_from(">%dd" % n, self.d, self.p))
            self.p += 8 * n
        else:
            raise ValueError("unsupported R type %d" % kind)
        if has_attr:
            attrs = dict((tag[1], v) for tag, v in self.item())
            if kind == 19 and "names" in attrs:
                return dict(zip(attrs["names"], val))
        return val


def _unserialize(data):
    r = _Reader(data)
    r.header()
    return r.item()


def read_novels(data_dir=PACKAGE_DATA):
    """Return {novel name: text}, lines joined with newlines, in NOVELS order."""
    index = _unserialize(gzip.decompress(open(os.path.join(data_dir, "Rdata.rdx"), "rb").read()))
    entries = index["variables"]
    db = open(os.path.join(data_dir, "Rdata.rdb"), "rb").read()
    novels = {}
    for name in NOVELS:
        offset, length = entries[name]
        blob = db[offset:offset + length]
        lines = _unserialize(zlib.decompress(blob[4:]))
        novels[name] = "\n".join("" if l is None else l for l in lines)
    return novels


_HEADING = re.compile(r"^(CHAPTER|Chapter|VOLUME|Volume)\b|^[^a-z]*$")
# Footnotes and editorial end notes that are not the novels' prose.
_NOT_PROSE = re.compile(r"^(\*|Finis$|Northanger Abbey was written)")


def paragraphs(text):
    """Prose paragraphs of a novel: title pages and chapter headings dropped, hard line breaks
    joined, the underscores marking italics removed, runs of spaces collapsed."""
    out, started = [], False
    for block in re.split(r"\n\s*\n", text):
        para = re.sub(r"\s+", " ", block.replace("_", "")).strip()
        if not para:
            continue
        if _HEADING.match(para):
            started = started or para.upper().startswith("CHAPTER")
            continue
        if started and not _NOT_PROSE.match(para):
            out.append(para)
    return out


def split_paragraphs(novels, val_fraction):
    """(train, validation) paragraph lists: the last val_fraction of every novel is held out."""
    train, val = [], []
    for name in NOVELS:
        paras = paragraphs(novels[name])
        cut = int(len(paras) * (1 - val_fraction))
        train += paras[:cut]
        val += paras[cut:]
    return train, val


if __name__ == "__main__":
    import sys
    novels = read_novels(sys.argv[1] if len(sys.argv) > 1 else PACKAGE_DATA)
    for k, v in novels.items():
        p = paragraphs(v)
        print(k, len(v), len(p), sum(map(len, p)), repr(p[0][:100]), repr(p[-1][-60:]))
