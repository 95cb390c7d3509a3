"""Hand-checked mapping from emoji to the ImageNet-1k class a careful annotator
would accept for the drawing (used only by ``collect.py``).

Each entry names the class twice, by index and by a word of its ILSVRC label,
so that a typo in either is caught (``collect.check_tables``). Left out on
purpose, because the drawing fits no single IN-1k class: turtle (five turtle
classes, none generic), elephant (Indian vs African), rabbit (wood rabbit vs
hare), owl, parrot (most sets draw a green parrot, not a macaw), butterfly,
spider, crab, poodle (toy/miniature/standard), kangaroo (IN-1k has wallaby
only), mouse the animal (IN-1k "mouse" is the computer mouse), kite (the IN-1k
"kite" is a bird), bicycle, hot beverage (cup vs coffee mug vs espresso), flute
(drawn as a recorder), and every person. About 60 sound mappings (screwdriver,
necktie, mosque, microphone, ...) were dropped only to keep ``images/`` near
15 MB; the list favours the 200 ImageNet-R classes and the classes that the
photos show too.
"""

from __future__ import annotations

from dataclasses import dataclass

#: The artwork sets, in the order collect.py lists their renditions.
STYLES = ("openmoji", "twemoji", "noto", "fluent-flat", "fluent-mono", "symbola")


@dataclass(frozen=True)
class EmojiClass:
    """One emoji: ``codepoints`` as in file names ("1F9A9", "2708-FE0F"),
    ``slug`` its CLDR short name in kebab case (Fluent Emoji file names),
    ``class_index`` the IN-1k index and ``label_word`` a word of that class's
    ILSVRC label (a cross-check, not a lookup key); ``skip_styles`` lists the
    artwork styles whose drawing a careful annotator would not give that class."""

    codepoints: str
    slug: str
    class_index: int
    label_word: str
    #: Styles whose drawing shows something else (a female mallard for "drake").
    skip_styles: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        parts = self.codepoints.split("-")
        if not parts or any(not p or any(c not in "0123456789ABCDEF" for c in p) for p in parts):
            raise ValueError(f"bad codepoints {self.codepoints!r}: upper-case hex joined by '-'")
        if not 0 <= self.class_index < 1000:
            raise ValueError(f"class index {self.class_index} of {self.slug} outside 0..999")
        if unknown := set(self.skip_styles) - set(STYLES):
            raise ValueError(f"{self.slug}: unknown styles {sorted(unknown)}; known: {STYLES}")
        if not self.slug or self.slug != self.slug.lower() or " " in self.slug:
            raise ValueError(f"bad slug {self.slug!r}: lower-case kebab case")

    @property
    def text(self) -> str:
        """The emoji as a string (with its variation selectors)."""
        return "".join(chr(int(p, 16)) for p in self.codepoints.split("-"))

    @property
    def base(self) -> str:
        """Codepoints without U+FE0F, as some emoji sets name their files."""
        return "-".join(p for p in self.codepoints.split("-") if p != "FE0F")


E = EmojiClass

EMOJI: tuple[EmojiClass, ...] = (
    # animals
    E("1F988", "shark", 2, "great white shark"),
    E("1F421", "blowfish", 397, "puffer"),
    E("1F413", "rooster", 7, "cock"),
    E("1F414", "chicken", 8, "hen"),
    E("1F427", "penguin", 145, "king penguin"),
    E("1F985", "eagle", 22, "bald eagle", skip_styles=("openmoji", "symbola")),
    E("1F99A", "peacock", 84, "peacock"),
    E("1F9A9", "flamingo", 130, "flamingo"),
    E("1F986", "duck", 97, "drake", skip_styles=("openmoji", "fluent-mono", "symbola")),
    E("1FABF", "goose", 99, "goose"),
    E("1F40A", "crocodile", 49, "African crocodile"),
    E("1FABC", "jellyfish", 107, "jellyfish"),
    E("1F40C", "snail", 113, "snail"),
    E("1F99E", "lobster", 122, "American lobster"),
    E("1F982", "scorpion", 71, "scorpion"),
    E("1F41D", "honeybee", 309, "bee"),
    E("1F41E", "lady-beetle", 301, "ladybug"),
    E("1F41C", "ant", 310, "ant"),
    E("1FAB3", "cockroach", 314, "cockroach"),
    E("1FAB0", "fly", 308, "fly"),
    E("1F993", "zebra", 340, "zebra"),
    E("1F416", "pig", 341, "hog"),
    E("1F402", "ox", 345, "ox"),
    E("1F40F", "ram", 348, "ram"),
    E("1F42A", "camel", 354, "Arabian camel"),
    E("1F999", "llama", 355, "llama"),
    E("1F99B", "hippopotamus", 344, "hippopotamus"),
    E("1F428", "koala", 105, "koala"),
    E("1F43C", "panda", 388, "giant panda"),
    E("1F43B-200D-2744-FE0F", "polar-bear", 296, "ice bear"),
    E("1F9A6", "otter", 360, "otter"),
    E("1F9A8", "skunk", 361, "skunk"),
    E("1F9A1", "badger", 362, "badger"),
    E("1F98D", "gorilla", 366, "gorilla"),
    E("1F9A7", "orangutan", 365, "orangutan"),
    E("1F405", "tiger", 292, "tiger"),
    E("1F406", "leopard", 288, "leopard"),
    E("1F981", "lion", 291, "lion"),
    E("1F98A", "fox", 277, "red fox"),
    E("1F43A", "wolf", 269, "grey wolf"),
    E("1F9AC", "bison", 347, "bison"),
    E("1F9AB", "beaver", 337, "beaver"),
    # food and plants
    E("1F34C", "banana", 954, "banana"),
    E("1F34B", "lemon", 951, "lemon", skip_styles=("fluent-mono",)),
    E("1F34D", "pineapple", 953, "pineapple"),
    E("1F353", "strawberry", 949, "strawberry"),
    E("1F34A", "tangerine", 950, "orange", skip_styles=("fluent-mono", "symbola")),
    E("1F34F", "green-apple", 948, "Granny Smith", skip_styles=("fluent-mono", "symbola")),
    E("1F344", "mushroom", 947, "mushroom"),
    E("1FAD1", "bell-pepper", 945, "bell pepper"),
    E("1F952", "cucumber", 943, "cucumber"),
    E("1F966", "broccoli", 937, "broccoli"),
    E("1F355", "pizza", 963, "pizza"),
    E("1F354", "hamburger", 933, "cheeseburger"),
    E("1F32D", "hot-dog", 934, "hotdog"),
    E("1F968", "pretzel", 932, "pretzel"),
    E("1F96F", "bagel", 931, "bagel"),
    E("1F366", "soft-ice-cream", 928, "ice cream"),
    E("1F32F", "burrito", 965, "burrito"),
    E("1F37A", "beer-mug", 441, "beer glass"),
    E("1F37E", "bottle-with-popping-cork", 907, "wine bottle"),
    # musical instruments
    E("1F3BB", "violin", 889, "violin"),
    E("1F3B7", "saxophone", 776, "sax"),
    E("1F3BA", "trumpet", 513, "cornet"),
    E("1FA97", "accordion", 401, "accordion"),
    # vehicles
    E("1F691", "ambulance", 407, "ambulance"),
    E("1F692", "fire-engine", 555, "fire engine"),
    E("1F69C", "tractor", 866, "tractor"),
    E("1F682", "locomotive", 820, "steam locomotive"),
    E("1F6A2", "ship", 628, "liner"),
    E("1F6F6", "canoe", 472, "canoe", skip_styles=("symbola",)),
    E("2708-FE0F", "airplane", 404, "airliner"),
    E("1FA82", "parachute", 701, "parachute"),
    E("1F6FB", "pickup-truck", 717, "pickup"),
    # household and other objects
    E("1F4F1", "mobile-phone", 487, "cellular telephone"),
    E("1F56F-FE0F", "candle", 470, "candle"),
    E("1FA93", "axe", 596, "hatchet"),
    E("1F528", "hammer", 587, "hammer"),
    E("1F6E1-FE0F", "shield", 787, "shield"),
    E("1F9F9", "broom", 462, "broom"),
    E("1FAA3", "bucket", 463, "bucket"),
    E("1F6C1", "bathtub", 435, "bathtub"),
    E("1F6D1", "stop-sign", 919, "street sign", skip_styles=("fluent-mono", "symbola")),
    E("26EA", "church", 497, "church"),
    E("1F3F0", "castle", 483, "castle"),
    E("1F3A0", "carousel-horse", 476, "carousel"),
    E("1F30B", "volcano", 980, "volcano"),
    E("1F392", "backpack", 414, "backpack"),
    E("1F461", "womans-sandal", 774, "sandal"),
    E("1F484", "lipstick", 629, "lipstick"),
    E("26BD", "soccer-ball", 805, "soccer ball"),
    E("1F3C0", "basketball", 430, "basketball"),
    E("1F3C9", "rugby-football", 768, "rugby ball", skip_styles=("openmoji", "noto")),
    E(
        "1F3BE",
        "tennis",
        852,
        "tennis ball",
        skip_styles=("noto", "fluent-flat", "fluent-mono", "symbola"),
    ),
    E("1F579-FE0F", "joystick", 613, "joystick"),
    E("1F9F8", "teddy-bear", 850, "teddy"),
    E("1F388", "balloon", 417, "balloon"),
    E("1F4EB", "closed-mailbox-with-raised-flag", 637, "mailbox", skip_styles=("symbola",)),
    E("1F489", "syringe", 845, "syringe"),
    E("1FA7A", "stethoscope", 823, "stethoscope"),
)
