#!/usr/bin/python3
"""zipcorpus.py SAMPLEFS DIR: mounts every zip in DIR with samplefs
(layout=tar, a fresh index_dir each) and compares each member it lists with
what `bsdtar -x` and Python's zipfile give for it: the same bytes, or EIO
(counted apart where the others read it).  One line per zip (with the
mount's first warnings), then the counts.  For other projects' test
corpora (libarchive's libarchive/test/test_read_format_zip*.uu, uudecoded;
ratarmount's tests/*.zip), fetched by hand and never committed: see
docs/zips.md.  Not part of `make test` (it needs the corpora)."""
import os, subprocess, sys, tempfile, time, zipfile, shutil, errno
sfs, d = sys.argv[1], sys.argv[2]
summary = {"same": 0, "eio_where_others_fail": 0, "eio_but_others_read": 0,
           "differ": 0, "mount_refused": 0}
for name in sorted(os.listdir(d)):
    z = os.path.join(d, name)
    t = tempfile.mkdtemp()
    ext, mnt = os.path.join(t, "x"), os.path.join(t, "m")
    os.makedirs(ext); os.makedirs(mnt)
    subprocess.run(["bsdtar", "-xf", z, "-C", ext], stderr=subprocess.DEVNULL)
    log = open(os.path.join(t, "log"), "w")
    p = subprocess.Popen([sfs, "-f", z, mnt, "-o", "layout=tar,index_dir=" + t + "/idx"],
                         stderr=log)
    for _ in range(200):
        if any(l.split()[1] == mnt for l in open("/proc/mounts")):
            break
        if p.poll() is not None:
            break
        time.sleep(0.05)
    if p.poll() is not None:
        print("%-60s REFUSED: %s" % (name, open(os.path.join(t, "log"), errors="replace").read().strip()[-200:]))
        summary["mount_refused"] += 1
        shutil.rmtree(t); continue
    try:
        zf = zipfile.ZipFile(z)
    except Exception:
        zf = None
    res = []
    for root, _, files in os.walk(mnt):
        for f in files:
            rel = os.path.relpath(os.path.join(root, f), mnt)
            mp = os.path.join(root, f)
            if os.path.islink(mp):
                continue
            try:
                got = open(mp, "rb").read()
            except OSError as e:
                got = e
            want = None
            ep = os.path.join(ext, rel)
            if os.path.isfile(ep):
                want = open(ep, "rb").read()
            zwant = None
            if zf:
                try:
                    zwant = zf.read(rel)
                except Exception:
                    pass
            if isinstance(got, OSError):
                if want is None and zwant is None:
                    summary["eio_where_others_fail"] += 1
                else:
                    summary["eio_but_others_read"] += 1
                    res.append("%s: EIO, bsdtar %s, zipfile %s" % (rel, want is not None and len(want), zwant is not None and len(zwant)))
            elif got == want or got == zwant:
                summary["same"] += 1
            else:
                summary["differ"] += 1
                res.append("%s: %d bytes DIFFER (bsdtar %s zipfile %s)" % (rel, len(got), want is not None and len(want), zwant is not None and len(zwant)))
    subprocess.run(["fusermount3", "-u", mnt]); p.wait()
    warn = [l.strip()[-160:] for l in open(os.path.join(t, "log"), errors="replace") if "warning" in l or "error" in l][:2]
    print("%-60s %s %s" % (name, "; ".join(res) if res else "ok", ("| " + " | ".join(warn)) if warn else ""))
    shutil.rmtree(t)
print(summary)
