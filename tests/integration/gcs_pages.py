#!/usr/bin/python3
"""The recorded GCS bucket of test_gcs.sh and test_download.sh.

    gcs_pages.py WWW

Writes WWW/qdb/ (the bucket "qdb" as nginx serves it: a Quick, Draw!
dataset under qd/, official layout, classes "b", "a c" and
"cr\u00e8me br\u00fbl\u00e9e", and the real bucket's shape under full/ and
sketchrnn/) and WWW/_pages/ (its listing pages in GCS's XML format, by
prefix and marker, each prefix's in two pages), WWW/_pages_gen2/ (the same pages
with other Generations) and WWW/classes.txt.
"""
import os, sys, time, urllib.parse
sys.path.insert(0, os.path.join(os.environ["SFS_ROOT"], "tests", "fixtures"))
from make_quickdraw import make_quickdraw
w = sys.argv[1]
root = w + "/qdb"
make_quickdraw(root + "/qd", ["b", "a c", "cr\u00e8me br\u00fbl\u00e9e"], [13, 17, 5],
               [11, 9, 4], layout="official", seed=4)
os.makedirs(w + "/_pages")

def enc(s):	# as the query's values are sent (AWS's encoding)
    return urllib.parse.quote(s, safe="-._~")

def contents(key, gen):
    st = os.stat(os.path.join(root, key))
    mt = int(st.st_mtime)
    return ("<Contents><Key>%s</Key><Generation>%d</Generation><MetaGeneration>1</MetaGeneration>"
            "<LastModified>%s.000Z</LastModified><ETag>\"%x-%x\"</ETag><Size>%d</Size></Contents>"
            % (key.replace("&", "&amp;"), gen, time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(mt)),
               mt, st.st_size, st.st_size))   # nginx's ETag: what its reads answer with

def page(prefix, marker, keys, prefixes, next_marker):
    body = ("<?xml version='1.0' encoding='UTF-8'?>"
            "<ListBucketResult xmlns='http://doc.s3.amazonaws.com/2006-03-01'>"
            "<Name>qdb</Name><Prefix>%s</Prefix><Marker>%s</Marker>" % (prefix, marker))
    if next_marker:
        body += "<NextMarker>%s</NextMarker>" % next_marker
    body += "<IsTruncated>%s</IsTruncated>" % ("true" if next_marker else "false")
    body += "".join(contents(k, 1500000000000000 + i) for i, k in enumerate(keys))
    body += "".join("<CommonPrefixes><Prefix>%s</Prefix></CommonPrefixes>" % p for p in prefixes)
    body += "</ListBucketResult>"
    name = "p=%s&m=%s.xml" % (enc(prefix), enc(marker))
    open(os.path.join(w, "_pages", name), "w").write(body)

for sub in ("numpy_bitmap", "sketchrnn"):
    prefix = "qd/%s/" % sub
    keys = sorted(prefix + f for f in os.listdir(os.path.join(root, prefix)))
    page(prefix, "", keys[:2], [], keys[1])
    page(prefix, keys[1], keys[2:], [], "")
# the real bucket's shape: images and strokes under prefixes of their own,
# and a class file the class list does not name (ignored)
import shutil
for src, dst in (("qd/numpy_bitmap", "full/numpy_bitmap"), ("qd/sketchrnn", "sketchrnn")):
    shutil.copytree(os.path.join(root, src), os.path.join(root, dst))
shutil.copy(os.path.join(root, "qd/numpy_bitmap/b.npy"), os.path.join(root, "full/numpy_bitmap/zz.npy"))
open(os.path.join(w, "classes.txt"), "w").write("b\na c\ncr\u00e8me br\u00fbl\u00e9e\n")
page("qd/", "", [], ["qd/numpy_bitmap/"], "qd/numpy_bitmap/")
page("qd/", "qd/numpy_bitmap/", [], ["qd/sketchrnn/"], "")
# the second page set (WWW/_pages_gen2/, test_gcs.sh): every object replaced
# by the same bytes (same ETag, size and time), so only its Generation differs
import re
os.makedirs(w + "/_pages_gen2")
for name in os.listdir(w + "/_pages"):
    body = open(os.path.join(w, "_pages", name)).read()
    body = re.sub(r"<Generation>(\d+)</Generation>",
                  lambda m: "<Generation>%d</Generation>" % (int(m.group(1)) + 7), body)
    open(os.path.join(w, "_pages_gen2", name), "w").write(body)
