"""The render tier: pages of the hosts that need JavaScript run in headless Chromium, and
every request the browser makes is answered by the crawler's own polite fetch path
(polite_fetch.py), so robots.txt, the host's one request in flight and its delay, the address
guard and the body caps hold for the browser as for plain fetches. Playwright is imported
only here, and only when a batch renders (browser.py)."""
