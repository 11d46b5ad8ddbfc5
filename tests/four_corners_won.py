"""A Four Corners deal the solver proved winnable, with its winning line.

Deal 4535699084930951477 was found by the solver's worker while it filled the Four
Corners pool (a random seed, as the worker draws them); an independent model of the
rules replayed the same 304 moves to a win.  The line is kept here as the solver found
it: every card move ``source>target=card`` (the card it moves), ``deal*n`` for n deals
in a row.  The tests replay it through the engine and through the API, so that a change
of the rules that makes this deal play differently shows at once.
"""

from __future__ import annotations

from service.engine import Move

SEED = 4535699084930951477

LINE = """
    corner-tl>ace-4=2C deal*12 corner-br>ace-1=2S deal*19 corner-tr>ace-1=3S deal*12
    corner-tr>ace-4=3C deal*18 corner-tl>king-2=QH deal*8 corner-tr>ace-4=4C
    corner-tr>ace-2=2H deal*5 corner-tl>ace-2=3H deal*2 left-4>ace-3=2D
    right-1>left-2=6H right-2>corner-bl=8D right-2>right-1=8H right-4>corner-br=JS
    right-4>king-1=QS corner-br>king-1=JS corner-br>king-1=TS corner-tl>king-1=9S
    corner-tl>right-2=JC corner-tl>ace-3=3D corner-tl>ace-4=5C left-4>ace-4=6C
    right-3>left-4=5S right-3>ace-3=4D right-4>ace-3=5D right-4>left-2=7H
    left-2>right-1=7H left-2>right-1=6H left-2>right-1=5H right-4>corner-tl=3S
    left-4>right-4=5S left-2>left-4=7S left-2>king-1=8S left-4>king-1=7S
    left-4>king-1=6S right-4>king-1=5S right-4>king-1=4S corner-tl>king-1=3S
    corner-tl>king-1=2S left-4>left-2=JS left-1>left-4=KC left-1>corner-bl=9D
    left-1>king-2=JH corner-bl>right-3=9D corner-bl>right-3=8D corner-bl>right-3=9D
    corner-bl>left-1=TS left-1>left-2=TS left-1>left-2=9S corner-br>left-1=3H
    right-3>corner-br=9D right-3>corner-bl=8D corner-bl>corner-br=8D
    right-3>corner-br=9D right-3>corner-bl=8D corner-bl>corner-br=8D
    right-3>corner-tl=6C corner-br>corner-bl=8D corner-br>corner-bl=9D
    corner-br>corner-bl=8D corner-br>corner-bl=9D corner-br>corner-bl=TD
    right-1>corner-br=5H right-1>corner-br=6H right-1>corner-br=7H right-1>corner-br=8H
    right-1>right-3=9H right-3>corner-br=9H right-3>corner-br=8H right-3>corner-tr=4C
    left-3>right-3=KD left-3>right-4=9C left-3>ace-3=6D right-1>ace-3=7D
    left-3>right-3=QD left-3>ace-1=4S corner-br>left-3=8H corner-br>left-3=9H
    corner-br>left-3=8H corner-br>left-3=7H corner-br>left-3=6H corner-br>left-3=5H
    corner-br>ace-2=4H left-3>ace-2=5H left-3>ace-2=6H corner-bl>corner-br=TD
    corner-bl>corner-br=9D corner-bl>ace-3=8D corner-bl>ace-3=9D corner-br>corner-bl=9D
    corner-br>corner-bl=TD corner-br>corner-bl=JD corner-bl>right-3=JD
    corner-bl>right-3=TD corner-bl>right-3=9D corner-bl>right-3=8D corner-bl>right-3=7D
    right-1>corner-bl=QH left-1>right-1=3H left-1>right-1=2H left-1>right-4=TC
    left-1>king-1=AS right-2>right-4=JC left-4>right-2=KC left-4>right-4=QC
    right-2>right-4=KC right-2>left-4=QC left-4>right-4=QC right-2>corner-br=2D
    right-2>ace-3=TD left-3>right-2=7H left-3>right-2=8H left-3>right-2=9H
    left-3>right-2=8H right-4>left-4=QC right-2>left-3=8H right-2>left-3=9H
    right-2>left-3=8H right-2>left-3=7H right-2>left-3=6H corner-tl>right-2=6C
    corner-tl>corner-tr=5C left-2>corner-tl=9S left-2>corner-tl=TS left-2>corner-tl=JS
    left-2>corner-tl=QS left-4>right-4=QC corner-bl>left-2=QH corner-bl>left-2=JH
    corner-tr>right-2=5C corner-tr>right-2=4C corner-tr>right-2=3C right-4>left-4=QC
    right-4>left-4=KC right-4>left-4=QC right-4>left-4=JC corner-bl>right-4=9C
    corner-tr>corner-bl=7S corner-tr>left-2=TH left-3>corner-tr=6H left-3>ace-2=7H
    left-3>ace-2=8H left-3>ace-2=9H left-2>ace-2=TH left-2>ace-2=JH left-2>ace-2=QH
    left-2>ace-2=KH left-2>left-3=9H left-2>left-1=6D left-2>king-2=TH left-3>king-2=9H
    left-3>king-2=8H left-3>king-2=7H corner-tr>king-2=6H corner-tr>king-2=5H
    left-1>right-3=6D right-1>corner-tr=2H right-1>corner-tr=3H right-1>king-2=4H
    corner-tr>king-2=3H corner-tr>king-2=2H corner-tr>king-2=AH corner-tl>right-1=QS
    corner-tl>right-1=JS corner-tl>right-1=TS corner-tl>right-1=9S
    corner-tl>corner-bl=8S left-4>corner-tr=JC left-4>corner-tr=QC left-4>corner-tr=KC
    left-4>corner-tr=QC left-4>corner-tr=JC corner-bl>right-1=8S corner-bl>right-1=7S
    corner-bl>right-1=6S right-2>left-4=3C right-2>left-4=4C right-2>left-4=5C
    right-2>left-4=6C right-2>ace-4=7C corner-tl>ace-4=8C right-4>ace-4=9C
    right-4>ace-4=TC corner-tr>ace-4=JC corner-tr>ace-4=QC corner-tr>ace-4=KC
    corner-tr>king-4=QC corner-tr>king-4=JC corner-tr>king-4=TC right-4>king-4=9C
    right-4>king-4=8C corner-tr>king-4=7C left-4>king-4=6C left-4>king-4=5C
    left-4>king-4=4C left-4>king-4=3C left-4>king-4=2C right-3>left-1=6D
    right-3>left-1=7D right-3>left-1=8D right-3>left-1=9D right-3>left-1=TD
    right-3>ace-3=JD right-3>ace-3=QD right-3>ace-3=KD right-3>king-3=QD
    corner-br>left-3=2D corner-br>left-3=3D corner-br>king-3=JD left-1>king-3=TD
    left-1>king-3=9D left-1>king-3=8D left-1>king-3=7D left-1>king-3=6D left-1>king-3=5D
    corner-bl>king-3=4D left-3>king-3=3D left-3>king-3=2D left-3>king-3=AD
    left-3>ace-1=5S right-1>ace-1=6S right-1>ace-1=7S right-1>ace-1=8S right-1>ace-1=9S
    right-1>ace-1=TS right-1>ace-1=JS right-1>ace-1=QS right-1>ace-1=KS
    right-1>king-4=AC
"""


def moves() -> list[tuple[Move, str | None]]:
    """The line as ``(move, the card it moves or None)``, one per move."""
    found = []
    for word in LINE.split():
        if word.startswith("deal"):
            _, _, count = word.partition("*")
            found += [(Move("deal"), None)] * int(count or 1)
        else:
            move, _, card = word.partition("=")
            found.append((Move.parse(move), card))
    return found
