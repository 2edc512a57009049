"""What the scripts read of a devnet feth made: its processes' PIDs."""
import json, os


def process_pid(dir, name):
    """The PID of process `name` of the devnet in `dir`: a recipe devnet's
    (`recipe.json`, what `feth devnet up` makes of one node) or one of abcid's
    own devnet code (`devnet.json`, each node of several)."""
    recipe = os.path.join(dir, "recipe.json")
    if os.path.exists(recipe):
        for p in json.load(open(recipe))["processes"]:
            if p["name"] == name:
                return p["pid"]
        raise SystemExit(f"{recipe} has no process {name}")
    return json.load(open(os.path.join(dir, "devnet.json")))[f"{name}_pid"]
