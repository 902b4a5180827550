#!/usr/bin/env python3
"""Writes the small committed fixtures under fixtures/ (run once; outputs are
committed). Needs pypdf only for the encrypted PDF. Deterministic."""
import os, random, sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fixtures")


def pdf(pages, outline=None):
    """A minimal text PDF: one Helvetica text stream per page, optional outline."""
    objs = []
    def add(body):
        objs.append(body)
        return len(objs)
    font = add(b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>")
    pages_id = len(objs) + 1 + 2 * len(pages)  # reserved below
    page_ids = []
    for lines in pages:
        ops = ["BT /F1 11 Tf 14 TL 72 760 Td"]
        for line in lines:
            esc = line.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")
            ops.append(f"({esc}) Tj T*")
        ops.append("ET")
        stream = "\n".join(ops).encode("latin-1")
        content = add(b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream")
        page_ids.append(add(b"<< /Type /Page /Parent %d 0 R /MediaBox [0 0 612 792] /Contents %d 0 R "
                            b"/Resources << /Font << /F1 %d 0 R >> >> >>" % (pages_id, content, font)))
    kids = " ".join(f"{p} 0 R" for p in page_ids).encode()
    assert add(b"<< /Type /Pages /Kids [" + kids + b"] /Count %d >>" % len(page_ids)) == pages_id
    catalog_extra = b""
    if outline:
        first = len(objs) + 2
        root_outline = add(b"")  # placeholder, filled below
        ids = list(range(first, first + len(outline)))
        for i, (title, page) in enumerate(outline):
            prev = b" /Prev %d 0 R" % ids[i - 1] if i else b""
            nxt = b" /Next %d 0 R" % ids[i + 1] if i + 1 < len(ids) else b""
            add(b"<< /Title (%s) /Parent %d 0 R /Dest [%d 0 R /Fit]%s%s >>"
                % (title.encode(), root_outline, page_ids[page - 1], prev, nxt))
        objs[root_outline - 1] = b"<< /Type /Outlines /First %d 0 R /Last %d 0 R /Count %d >>" % (ids[0], ids[-1], len(ids))
        catalog_extra = b" /Outlines %d 0 R /PageMode /UseOutlines" % root_outline
    catalog = add(b"<< /Type /Catalog /Pages %d 0 R%s >>" % (pages_id, catalog_extra))
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for i, body in enumerate(objs, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % i + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objs) + 1)
    for off in offsets:
        out += b"%010d 00000 n \n" % off
    out += b"trailer\n<< /Size %d /Root %d 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objs) + 1, catalog, xref)
    return bytes(out)


def image_only_pdf():
    """One page that draws a grey image and no text: what a scanner makes."""
    objs = []
    def add(b):
        objs.append(b); return len(objs)
    w = h = 8
    img = add(b"<< /Type /XObject /Subtype /Image /Width 8 /Height 8 /ColorSpace /DeviceGray /BitsPerComponent 8 /Length 64 >>\nstream\n" + bytes(range(0, 256, 4)) + b"\nendstream")
    stream = b"q 400 0 0 400 100 300 cm /Im1 Do Q"
    content = add(b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream")
    page = add(b"<< /Type /Page /Parent 4 0 R /MediaBox [0 0 612 792] /Contents %d 0 R /Resources << /XObject << /Im1 %d 0 R >> >> >>" % (content, img))
    add(b"<< /Type /Pages /Kids [%d 0 R] /Count 1 >>" % page)
    cat = add(b"<< /Type /Catalog /Pages 4 0 R >>")
    return serialize(objs, cat)


def serialize(objs, root):
    """A PDF file of numbered objects (1-based) with its xref table."""
    out = bytearray(b"%PDF-1.4\n"); offs = []
    for i, b in enumerate(objs, 1):
        offs.append(len(out)); out += b"%d 0 obj\n" % i + b + b"\nendobj\n"
    x = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objs) + 1)
    for o in offs: out += b"%010d 00000 n \n" % o
    out += b"trailer\n<< /Size %d /Root %d 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objs) + 1, root, x)
    return bytes(out)


def bomb_pdf(inflated_bytes):
    """One page whose Flate content stream inflates to `inflated_bytes` of
    spaces: a decompression bomb (about 1,000:1)."""
    import zlib
    z = zlib.compressobj(9)
    chunk = b" " * (1 << 20)
    stream = b"".join(z.compress(chunk) for _ in range(inflated_bytes >> 20)) + z.flush()
    objs = [
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
        b"<< /Length %d /Filter /FlateDecode >>\nstream\n" % len(stream) + stream + b"\nendstream",
        b"<< /Type /Page /Parent 4 0 R /MediaBox [0 0 612 792] /Contents 2 0 R /Resources << /Font << /F1 1 0 R >> >> >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Catalog /Pages 4 0 R >>",
    ]
    return serialize(objs, 5)


def hostile():
    """Files built to break parsers (fixtures/hostile/): each must end up
    listed, indexed or broken with a reason, and no process may die."""
    depth = 20_000
    write("hostile/deep-nesting.html",
          "<!doctype html><html><head><title>Deep nesting</title></head><body>"
          + "<div>" * depth + "<p>Words at the bottom of twenty thousand divs.</p>"
          + "</div>" * depth + "</body></html>\n")
    write("hostile/deep-nesting.md",
          "# Deep nesting\n\n" + "> " * depth + "Words at the bottom of twenty thousand quotes.\n\n"
          + "".join("  " * i + "- item %d\n" % i for i in range(400)))
    write("hostile/decompression-bomb.pdf", bomb_pdf(256 << 20))
    write("hostile/ordinary.md", "# An ordinary note\n\nThe batch goes on past the hostile files: this note is indexed.\n")


def write(rel, data):
    path = os.path.join(ROOT, rel)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(data if isinstance(data, bytes) else data.encode())


GUIDE_PAGES = [
    ["Field Guide to Pond Ecology", "", "Ponds are small bodies of still water that host a rich",
     "community of plants, insects and amphibians. This guide explains",
     "how to survey a pond and record what lives in it."],
    ["Surveying a Pond", "", "Walk the margin slowly and note emergent plants such as reeds.",
     "Dip a net at three points and sort the catch in a white tray.",
     "Record dragonfly nymphs, water boatmen and snails separately."],
    ["Water Quality", "", "Measure temperature, pH and dissolved oxygen at dawn and dusk.",
     "Low oxygen at dawn points to too many nutrients and algae."],
]

def main():
    good = pdf(GUIDE_PAGES, outline=[("Introduction", 1), ("Surveying a Pond", 2), ("Water Quality", 3)])
    write("docs/pond-ecology.pdf", good)
    write("bad/truncated.pdf", good[: len(good) // 3])
    write("bad/scanned.pdf", image_only_pdf())
    rnd = random.Random(7)
    write("bad/binary.pdf", bytes(rnd.randrange(256) for _ in range(3000)))
    write("bad/binary.txt", bytes(rnd.randrange(256) for _ in range(3000)))
    write("bad/zero.txt", b"")
    from pypdf import PdfReader, PdfWriter
    import io
    w = PdfWriter(clone_from=PdfReader(io.BytesIO(good)))
    w.encrypt(user_password="secret", owner_password="owner", algorithm="RC4-128")
    buf = io.BytesIO(); w.write(buf)
    write("bad/encrypted.pdf", buf.getvalue())
    write("docs/notes-latin1.txt", "Notes on caf\u00e9 culture\n\nThe caf\u00e9s of Lyon serve cr\u00e8me br\u00fbl\u00e9e and strong coffee; this note records a tasting tour through six of them.\n".encode("latin-1"))
    hostile()
    print("fixtures written to", os.path.normpath(ROOT))

if __name__ == "__main__":
    main()
