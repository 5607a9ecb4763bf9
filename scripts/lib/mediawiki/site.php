<?php
/**
 * scripts/lib/mediawiki/site.php: a MediaWiki maintenance script for scripts/mediawiki-check.sh.
 * It changes the wiki only through MediaWiki's own PHP (WikiPage, MovePage, DeletePage, the job
 * runner), as an editor's save, a move or a deletion does, and says what MediaWiki itself links.
 *
 * Run through MediaWiki's runScript.php, with MW_CONFIG_FILE naming the wiki's LocalSettings.php:
 *   php maintenance/runScript.php site.php content       pages with every character a title may
 *        hold, in several namespaces, with redirects and __NOINDEX__ pages
 *   php maintenance/runScript.php site.php expect NS,..  "url<TAB>lastmod" of each page of these
 *        namespaces that is no redirect and has no 'noindex' page property, the URL being
 *        Title::getFullURL() and the lastmod page_touched (W3C, UTC)
 *   php maintenance/runScript.php site.php live STEP     one change: edit | create | move | delete
 * Every change runs the deferred updates and the job queue before the script ends.
 */

use MediaWiki\MediaWikiServices;

require_once getenv( 'MW_INSTALL_PATH' ) . '/maintenance/Maintenance.php';

class SitemapdCheckSite extends Maintenance {
	public function __construct() {
		parent::__construct();
		$this->addArg( 'command', 'content | expect | live' );
		$this->addArg( 'arg', 'namespaces (expect) or step (live)', false );
	}

	/** Titles using every character a title may hold ($wgLegalTitleChars), and beyond ASCII. */
	private const TITLES = [
		'Punctuation !"$&\'()*,-.:;=?@^_`~+ kept and escaped',
		'Back\\slash, 100% pure & 50%off',
		'Q&A',
		'A+B=C',
		'What? Why?',
		'Don\'t "quote" me',
		'Caret^and`backtick`',
		'Path/Sub/page',
		'Colon: in a title',
		'Semicolon;at@dollar$bang!star*(paren),comma',
		'Tilde~dot.ends.',
		'Café crème',
		'日本語のページ',
		'Ωmega über Straße',
		'Emoji 😀 smile',
		'lower case first',
		'Plain',
	];

	public function execute() {
		$command = $this->getArg( 0 );
		if ( $command === 'content' ) {
			$this->content();
		} elseif ( $command === 'expect' ) {
			$this->expect( array_map( 'intval', explode( ',', $this->getArg( 1, '0' ) ) ) );
		} elseif ( $command === 'live' ) {
			$this->live( $this->getArg( 1 ) );
		} else {
			$this->fatalError( "unknown command $command" );
		}
	}

	private function user() {
		return User::newSystemUser( 'Sitemapd check', [ 'steal' => true ] );
	}

	private function title( $text ) {
		$title = Title::newFromText( $text );
		if ( !$title ) {
			$this->fatalError( "not a valid title: $text" );
		}
		return $title;
	}

	private function edit( $text, $wikitext ) {
		$title = $this->title( $text );
		$page = MediaWikiServices::getInstance()->getWikiPageFactory()->newFromTitle( $title );
		$content = ContentHandler::makeContent( $wikitext, $title );
		$status = $page->doUserEditContent( $content, $this->user(), 'sitemapd check' );
		if ( !$status->isOK() ) {
			$this->fatalError( "edit of $text: " . $status->getWikiText() );
		}
	}

	/** Runs what MediaWiki defers to the end of a request, then the whole job queue. */
	private function settle() {
		DeferredUpdates::doUpdates();
		MediaWikiServices::getInstance()->getJobRunner()->run( [ 'maxJobs' => 10000 ] );
		DeferredUpdates::doUpdates();
	}

	private function content() {
		// Namespaces: main (0), Talk (1), User (2), Project (4, the wiki's name), Help (12),
		// Recipe (3000, a content namespace), Café (3002, extra, named beyond ASCII).
		$prefixes = [ '', 'Talk:', 'User:', 'Project:', 'Help:', 'Recipe:', 'Café:' ];
		foreach ( self::TITLES as $i => $t ) {
			foreach ( $prefixes as $p ) {
				$this->edit( "$p$t", "Page $i: $t.\n\n[[Plain]]" );
			}
		}
		// Redirects, in listed and unlisted namespaces.
		$this->edit( 'Redirect to plain', "#REDIRECT [[Plain]]" );
		$this->edit( 'Recipe:Redirect & more', "#REDIRECT [[Recipe:Plain]]" );
		$this->edit( 'Project:Redirect?', "#REDIRECT [[Café crème]]" );
		// __NOINDEX__ pages (MediaWiki records the page property in every namespace; the check's
		// empty $wgExemptFromUserRobotsControl makes it send the robots tag in content namespaces
		// too, so no page listed says noindex).
		$this->edit( 'Hidden from robots', "Not for search engines.\n__NOINDEX__" );
		$this->edit( 'Recipe:Hidden & secret', "__NOINDEX__ here." );
		$this->edit( 'Café:Hidden é', "__NOINDEX__" );
		$this->edit( 'Talk:Hidden', "__NOINDEX__" );
		$this->settle();
		echo "content made\n";
	}

	private function expect( array $namespaces ) {
		$dbr = wfGetDB( DB_REPLICA );
		$res = $dbr->select(
			'page',
			[ 'page_id', 'page_namespace', 'page_title', 'page_touched', 'page_is_redirect' ],
			[ 'page_namespace' => $namespaces ],
			__METHOD__,
			[ 'ORDER BY' => 'page_id' ]
		);
		$props = MediaWikiServices::getInstance()->getPageProps();
		foreach ( $res as $row ) {
			if ( $row->page_is_redirect ) {
				continue;
			}
			$title = Title::newFromRow( $row );
			if ( $props->getProperties( $title, 'noindex' ) ) {
				continue;
			}
			$lastmod = wfTimestamp( TS_MW, $row->page_touched );
			$w3c = preg_replace( '/^(....)(..)(..)(..)(..)(..)$/', '$1-$2-$3T$4:$5:$6+00:00', $lastmod );
			echo $title->getFullURL() . "\t" . $w3c . "\n";
		}
	}

	private function live( $step ) {
		$services = MediaWikiServices::getInstance();
		if ( $step === 'edit' ) {
			// An edit of a page with escaped characters: page_touched moves.
			$this->edit( 'Q&A', "Edited at " . wfTimestampNow() . "." );
			echo "edited Q&A\n";
		} elseif ( $step === 'create' ) {
			$this->edit( 'Recipe:New ?=+& \'page\' ü', "Created." );
			echo "created Recipe:New ?=+& 'page' ü\n";
		} elseif ( $step === 'move' ) {
			$from = $this->title( 'A+B=C' );
			$to = $this->title( 'Moved: A+B=C ä' );
			$status = $services->getMovePageFactory()->newMovePage( $from, $to )
				->move( $this->user(), 'sitemapd check', true );
			if ( !$status->isOK() ) {
				$this->fatalError( "move: " . $status->getWikiText() );
			}
			echo "moved A+B=C to Moved: A+B=C ä, leaving a redirect\n";
		} elseif ( $step === 'delete' ) {
			$page = $services->getWikiPageFactory()->newFromTitle( $this->title( 'Don\'t "quote" me' ) );
			$status = $services->getDeletePageFactory()->newDeletePage( $page, $this->user() )
				->deleteUnsafe( 'sitemapd check' );
			if ( !$status->isOK() ) {
				$this->fatalError( "delete: " . $status->getWikiText() );
			}
			echo "deleted Don't \"quote\" me\n";
		} else {
			$this->fatalError( "unknown step $step" );
		}
		$this->settle();
	}
}

$maintClass = SitemapdCheckSite::class;
require_once RUN_MAINTENANCE_IF_MAIN;
