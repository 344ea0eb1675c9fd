/**
 * The program a long-lived Tesseract worker runs: Python 3 with Debian's `python3-tesserocr`, the
 * maintained binding of Tesseract's C API (TessBaseAPI), so the models are loaded once per process and
 * not once per page. Kept as a string so that every way this package runs (tsx, jest, the image's
 * bundle) starts it with `python3 -c` and no file to ship beside the code.
 *
 * The protocol, on stdin and stdout, one request at a time:
 * - at start the worker writes one JSON line: `{"version", "languages", "tessdata"}`;
 * - a request is one JSON line `{"languages", "psm", "dpi", "width", "height", "bilevel", "bytes"}`
 *   followed by `bytes` bytes of pixels: 8-bit grey rows, or for `bilevel` one bit per pixel in rows
 *   padded to a byte, a set bit white (TessBaseAPI::SetImage's own packing);
 * - the answer is one JSON line, `{"bytes"}` followed by that many bytes of TSV (UTF-8, the rows of the
 *   CLI's `tsv` output without its header), or `{"error"}` when Tesseract could not read the page.
 * A dpi of 0 is none: Tesseract estimates the resolution from the text, as its CLI does.
 */
export const TESSERACT_WORKER_SOURCE = String.raw`
import json
import sys

import tesserocr

stdin, stdout = sys.stdin.buffer, sys.stdout.buffer


def send(header, body=b""):
    stdout.write(json.dumps(header).encode() + b"\n" + body)
    stdout.flush()


def read_exactly(count):
    parts = []
    while count > 0:
        part = stdin.read(count)
        if not part:
            sys.exit("the request ended early")
        parts.append(part)
        count -= len(part)
    return b"".join(parts)


def recognise(api, request, pixels):
    width, height = request["width"], request["height"]
    api.SetPageSegMode(request["psm"])
    api.SetVariable("user_defined_dpi", str(request["dpi"]))
    if request["bilevel"]:
        api.SetImageBytes(pixels, width, height, 0, (width + 7) // 8)
    else:
        api.SetImageBytes(pixels, width, height, 1, width)
    try:
        return api.GetTSVText(0)
    finally:
        api.Clear()


def main():
    tessdata, languages = tesserocr.get_languages()
    send({"version": tesserocr.tesseract_version().split("\n")[0], "languages": languages, "tessdata": tessdata})
    apis = {}
    while True:
        line = stdin.readline()
        if not line:
            return
        request = json.loads(line)
        pixels = read_exactly(request["bytes"])
        try:
            api = apis.get(request["languages"])
            if api is None:
                api = apis[request["languages"]] = tesserocr.PyTessBaseAPI(lang=request["languages"])
            tsv = recognise(api, request, pixels)
        except Exception as error:
            send({"error": str(error) or type(error).__name__})
            continue
        if tsv is None:
            send({"error": "Tesseract could not recognise the page"})
        else:
            body = tsv.encode()
            send({"bytes": len(body)}, body)


main()
`;
