"""Near-duplicate detection against the demo web's labelled groups, through Dagster."""

from itertools import combinations

import pyarrow.parquet as pq
import pytest
from dagster import DagsterInstance, materialize

from crawl_assets.cli.cycle import run_cycle
from crawl_assets.defs.assets import near_duplicate_clusters
from crawl_assets.pipeline.fetch_step import demoted_hosts
from crawl_assets.storage.layout import host_dup_ratio_file, near_clusters_file
from support import DemoWebProcess, write_test_settings

DAY = "2026-11-29"


@pytest.fixture(scope="module")
def crawl(tmp_path_factory):
    folder = tmp_path_factory.mktemp("neardup")
    with DemoWebProcess(seed=5, hosts=1, pages_per_host=5, near_duplicates=True) as server:
        # (the mirror hosts have 6 pages each: judged from 5)
        resource = write_test_settings(folder, server.web, extra="demote_min_pages = 5\n")
        with DagsterInstance.ephemeral() as instance:
            run_cycle(DAY, instance, resource)
            confirmed = materialize(
                [near_duplicate_clusters], instance=instance, partition_key=DAY,
                resources={"crawl_settings": resource},
                run_config={"ops": {"near_duplicate_clusters": {"config": {"confirm_with_minhash": True}}}})
    return server.web, resource.load(), confirmed


def same_group_pairs(groups_of_urls):
    return {frozenset(p) for urls in groups_of_urls for p in combinations(sorted(urls), 2)}


def test_precision_and_recall_against_the_labelled_groups(crawl):
    web, settings, _ = crawl
    clusters = pq.read_table(near_clusters_file(settings.data_root, DAY)).to_pylist()
    representative = {row["url"]: row["representative"] for row in clusters}
    labelled = web.near_duplicate_groups()
    labelled_urls = {u for g in labelled for u in g.urls}
    assert labelled_urls <= set(representative)  # every labelled page was fetched and fingerprinted

    truth = same_group_pairs(g.urls for g in labelled)
    predicted_groups = {}
    for url in labelled_urls:
        predicted_groups.setdefault(representative[url], []).append(url)
    predicted = same_group_pairs(predicted_groups.values())
    precision = len(predicted & truth) / len(predicted)
    recall = len(predicted & truth) / len(truth)
    print(f"\nnear-duplicate clusters vs labels: precision {precision:.3f}, recall {recall:.3f} "
          f"({len(truth)} labelled pairs, {len(predicted)} predicted)")
    assert precision >= 0.95 and recall >= 0.9
    # The genuinely different articles on one template stay apart.
    distinct = [g.urls[0] for g in labelled if g.kind == "distinct"]
    assert len({representative[u] for u in distinct}) == len(distinct)


def test_minhash_confirms_the_candidates(crawl):
    web, settings, confirmed = crawl
    (event,) = confirmed.get_asset_materialization_events()
    metadata = event.materialization.metadata
    # Every candidate pair was re-read from the WARCs and its Jaccard similarity confirmed.
    assert metadata["near_pairs"].value > 50 and metadata["pairs_rejected_by_minhash"].value == 0


def test_hosts_that_mostly_copy_get_a_high_near_duplicate_ratio(crawl):
    web, settings, _ = crawl
    ratios = {r["host"]: r for r in pq.read_table(host_dup_ratio_file(settings.data_root, DAY)).to_pylist()}
    assert ratios["template.demo.test"]["near_duplicate_ratio"] == 0.0  # different articles
    assert ratios["articles.demo.test"]["near_duplicate_ratio"] > 0.5  # variants of few stories
    assert ratios[web.hostname(0)]["near_duplicate_ratio"] < 0.2  # an ordinary host


def test_a_host_of_distinct_template_pages_is_not_demoted_while_a_mirror_host_is(crawl):
    web, settings, _ = crawl
    quality = pq.read_table(host_dup_ratio_file(settings.data_root, DAY))
    rows = {r["host"]: r for r in quality.to_pylist()}
    # tags.demo.test: 12 tag pages in one template whose long description outweighs each
    # one's list: 11 of its 13 pages are near-duplicates by their main text (demoted by that
    # alone), none a copy: each tag lists other stories.
    tags = rows["tags.demo.test"]
    assert (tags["pages"], tags["near_duplicates"], tags["copies"]) == (13, 11, 0)
    assert tags["near_duplicate_ratio"] >= settings.demote_near_dup_ratio
    # The two mirrors serve the same 6 files: of their 12 pages, 3 groups of 4 copies, 9 copies
    # in all; whichever host was fetched second holds at least 5 of its 6 as copies.
    mirrors = [rows["www.mirror.demo.test"], rows["mirror.demo.test"]]
    assert [m["pages"] for m in mirrors] == [6, 6] and sum(m["copies"] for m in mirrors) == 9
    # The variants of a few stories on one host are copies too (their links are the host's).
    assert rows["articles.demo.test"]["copies"] == rows["articles.demo.test"]["near_duplicates"] > 10
    # Demoted: the second mirror alone (articles.demo.test's copies are under the ratio).
    demoted = demoted_hosts(quality, settings)
    assert len(demoted) == 1 and demoted < {"www.mirror.demo.test", "mirror.demo.test"}
