"""The vocabulary the synthetic web's pseudo-English text is built from.

Kept apart from the text and page builders (prose.py, ordinary/site_pages.py) so they stay
about structure. A handful of non-ASCII words make sure a crawler's UTF-8 handling is
exercised; none contain HTML metacharacters, so the renderer never has to escape text.
"""

from __future__ import annotations

WORDS: tuple[str, ...] = tuple(
    """
    the of and to in is that for it as was with be by on not he this are or his from at
    which but have an they you were her she there one all we their been has when who will
    more no if out so said what up its about into than them can only other new some could
    time these two may then do first any my now such like our over man me even most made
    after also did many before must through back years where much your way well down
    should because each just those people how too little state good very make world still
    own see men work long get here between both life being under never day same another
    know while last might us great old year off come since against go came right used take
    three small large place house number water garden river mountain city village market
    harbour bridge station library museum school kitchen window morning evening winter
    summer autumn spring weather journey letter story history science music painting
    theatre machine engine railway ship island forest meadow valley harvest bread cheese
    coffee tea orange lemon apple copper silver iron stone timber paper glass cotton wool
    simple quiet bright early late careful gentle ancient modern public private local
    national common special useful familiar certain several various general natural
    build carry follow gather measure notice open publish repair travel visit wander
    write remember explain describe discover consider develop improve prepare protect
    across along around beyond during toward within without perhaps rather almost always
    often seldom together however therefore meanwhile although
    café naïve façade Zürich résumé smörgåsbord jalapeño crème brûlée København
    """.split()
)

# Words for names and headings: plain ASCII so titles read cleanly.
NAME_WORDS: tuple[str, ...] = tuple(
    """
    amber birch cedar delta ember falcon garnet harbor indigo juniper kestrel lantern
    meadow north orchard pebble quarry raven summit thistle upland velvet willow yarrow
    zephyr atlas beacon compass drift echo fern grove haven isle jade kite lagoon maple
    """.split()
)
