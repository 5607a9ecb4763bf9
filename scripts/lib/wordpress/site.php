<?php
// scripts/lib/wordpress/site.php: the WordPress side of scripts/wordpress-check.sh. Everything goes
// through WordPress's own PHP functions, as the admin screens would do it.
//
// Usage: php site.php COMMAND   (environment: WP_ROOT, the document root; WP_HOST, 127.0.0.1:PORT)
//   install          wp_install and the settings a new site owner picks
//   content          the test content (categories, posts, pages, the static front page)
//   expect           what WordPress says about the kinds the views cover, one line each:
//                      url <TAB> kind <TAB> loc <TAB> lastmod   every URL WordPress shows (kind:
//                        post, page, home, category; lastmod UTC, +00:00)
//                      protected <TAB> loc                      a password-protected post or page
//                      hidden <TAB> status <TAB> slug <TAB> ID  what must not be listed
//   front posts|page the home page lists the latest posts / is the static page "Home"
//   edit1, edit2     the live changes (an edit, a trash, a publish), see below

if ( PHP_SAPI !== 'cli' ) {
	exit( 1 );
}
$command = $argv[1] ?? '';
$_SERVER['HTTP_HOST']   = getenv( 'WP_HOST' );
$_SERVER['SERVER_NAME'] = '127.0.0.1';
$_SERVER['REQUEST_URI'] = '/';
$_SERVER['SERVER_PROTOCOL'] = 'HTTP/1.1';
if ( 'install' === $command ) {
	define( 'WP_INSTALLING', true );
}
require getenv( 'WP_ROOT' ) . '/wp-load.php';

function fail( $message ) {
	fwrite( STDERR, "site.php: $message\n" );
	exit( 1 );
}
function must( $id, $what ) {
	if ( is_wp_error( $id ) || ! $id ) {
		fail( $what . ': ' . ( is_wp_error( $id ) ? $id->get_error_message() : 'failed' ) );
	}
	return $id;
}
function post( $fields, $what ) {
	$fields += array( 'post_author' => 1, 'post_content' => "<p>$what</p>" );
	return must( wp_insert_post( wp_slash( $fields ), true ), $what );
}
function by_slug( $slug, $type = 'post' ) {
	// (Named statuses: a query by name for 'any' status drops a draft for a visitor.)
	$found = get_posts(
		array(
			'name'        => $slug,
			'post_type'   => $type,
			'post_status' => array( 'publish', 'draft', 'pending', 'private', 'future' ),
			'numberposts' => 1,
		)
	);
	$found or fail( "no $type $slug" );
	return $found[0]->ID;
}
function category( $name, $parent = 0 ) {
	$term = must( wp_insert_term( $name, 'category', array( 'parent' => $parent ) ), "category $name" );
	return $term['term_id'];
}
function utc( $gmt ) { // a *_gmt column as sitemapd writes it
	return gmdate( 'Y-m-d\TH:i:s+00:00', strtotime( $gmt . ' UTC' ) );
}

switch ( $command ) {
	case 'install':
		require_once ABSPATH . 'wp-admin/includes/upgrade.php';
		$done = wp_install( 'sitemapd check', 'admin', 'admin@example.com', true, '', wp_generate_password( 24 ) );
		must( $done['user_id'] ?? 0, 'wp_install' );
		// A site owner in Paris: post dates (and so permalinks) are local time, lastmods UTC.
		update_option( 'timezone_string', 'Europe/Paris' );
		update_option( 'posts_per_page', 3 );
		update_option( 'permalink_structure', '/%year%/%monthnum%/%postname%/' );
		echo "installed\n";
		break;

	case 'content':
		// A run of its own: WordPress starts with the permalinks set, so categories and tags
		// register their rewrite rules, and the flush at the end keeps them.
		wp_set_current_user( 1 );
		// The sample post goes; the sample page stays.
		wp_delete_post( 1, true );

		$news    = category( 'News' );
		$europe  = category( 'Europe', $news );
		$france  = category( 'France', $europe );
		$regions = category( 'Regions' );
		$asia    = category( 'Asia', $regions );

		post( array( 'post_title' => 'First light', 'post_status' => 'publish', 'post_date' => '2023-06-15 10:00:00', 'post_category' => array( $news ) ), 'old post' );
		post( array( 'post_title' => 'Café crème', 'post_status' => 'publish', 'post_date' => '2024-01-10 09:00:00', 'post_category' => array( $europe ) ), 'accented title' );
		post( array( 'post_title' => 'Привет мир', 'post_status' => 'publish', 'post_date' => '2024-02-20 18:00:00', 'post_category' => array( $france ) ), 'percent-encoded slug' );
		// 00:30 in Paris on 1 March is still February in UTC: the permalink says 2024/03.
		post( array( 'post_title' => 'Leap night', 'post_status' => 'publish', 'post_date' => '2024-03-01 00:30:00', 'post_category' => array( $asia ) ), 'month boundary' );
		post( array( 'post_title' => 'Tagged note', 'post_status' => 'publish', 'post_date' => '2024-04-02 12:00:00', 'tags_input' => array( 'misc' ) ), 'uncategorized, tagged' );
		post( array( 'post_title' => 'Members only', 'post_status' => 'publish', 'post_password' => 'secret', 'post_date' => '2024-05-05 08:00:00', 'post_category' => array( $news ) ), 'password-protected' );
		post( array( 'post_title' => 'Trashed post', 'post_status' => 'publish', 'post_date' => '2024-04-20 08:00:00', 'post_category' => array( $europe ) ), 'to be trashed' );
		post( array( 'post_title' => 'Gone soon', 'post_status' => 'publish', 'post_date' => '2024-04-25 08:00:00', 'post_category' => array( $europe ) ), 'trashed live' );
		wp_trash_post( by_slug( 'trashed-post' ) ) or fail( 'wp_trash_post' );
		// A draft whose author set its URL slug, published live with wp_publish_post (as cron does).
		post( array( 'post_title' => 'Draft post', 'post_name' => 'draft-post', 'post_status' => 'draft', 'post_category' => array( $news ) ), 'draft' );
		// A draft as the editor saves it (no slug yet), published live as the editor's button does.
		post( array( 'post_title' => 'Second draft', 'post_status' => 'draft', 'post_category' => array( $europe ) ), 'draft without slug' );
		post( array( 'post_title' => 'Private post', 'post_status' => 'private', 'post_category' => array( $news ) ), 'private' );
		post( array( 'post_title' => 'Scheduled post', 'post_status' => 'future', 'post_date' => gmdate( 'Y-m-d H:i:s', time() + 86400 * 365 ), 'post_category' => array( $news ) ), 'scheduled' );

		$home  = post( array( 'post_title' => 'Home', 'post_type' => 'page', 'post_status' => 'publish', 'post_date' => '2023-01-02 10:00:00' ), 'front page' );
		$blog  = post( array( 'post_title' => 'Blog', 'post_type' => 'page', 'post_status' => 'publish', 'post_date' => '2023-01-03 10:00:00' ), 'posts page' );
		$about = post( array( 'post_title' => 'About', 'post_type' => 'page', 'post_status' => 'publish', 'post_date' => '2023-01-04 10:00:00' ), 'top-level page' );
		$team  = post( array( 'post_title' => 'Team', 'post_type' => 'page', 'post_status' => 'publish', 'post_parent' => $about, 'post_date' => '2023-01-05 10:00:00' ), 'child page' );
		post( array( 'post_title' => 'Lead', 'post_type' => 'page', 'post_status' => 'publish', 'post_parent' => $team, 'post_date' => '2023-01-06 10:00:00' ), 'grandchild page' );
		post( array( 'post_title' => 'Members page', 'post_type' => 'page', 'post_status' => 'publish', 'post_password' => 'secret', 'post_date' => '2023-01-07 10:00:00' ), 'protected page' );
		post( array( 'post_title' => 'Draft page', 'post_name' => 'draft-page', 'post_type' => 'page', 'post_status' => 'draft', 'post_parent' => $about ), 'draft page' );
		update_option( 'show_on_front', 'page' );
		update_option( 'page_on_front', $home );
		update_option( 'page_for_posts', $blog );

		flush_rewrite_rules( false );
		echo "content made\n";
		break;

	case 'expect':
		$posts = get_posts(
			array(
				'post_type'        => array( 'post', 'page' ),
				'post_status'      => 'publish',
				'numberposts'      => -1,
				'suppress_filters' => false,
			)
		);
		foreach ( $posts as $p ) {
			if ( '' !== $p->post_password ) {
				echo "protected\t", get_permalink( $p ), "\n";
				continue;
			}
			echo "url\t{$p->post_type}\t", get_permalink( $p ), "\t", get_post_modified_time( 'c', true, $p ), "\n";
		}
		if ( 'posts' === get_option( 'show_on_front' ) ) {
			// The home page: dated by the posts it shows, as WordPress 6.5 and later date it in
			// their own sitemap (the newest posts by date, then the latest modified of them).
			$latest = new WP_Query(
				array(
					'post_type'              => 'post',
					'post_status'            => 'publish',
					'orderby'                => 'date',
					'order'                  => 'DESC',
					'no_found_rows'          => true,
					'update_post_meta_cache' => false,
					'update_post_term_cache' => false,
				)
			);
			$shown = wp_list_sort( $latest->posts, 'post_modified_gmt', 'DESC' );
			echo "url\thome\t", home_url( '/' ), "\t", $shown ? utc( $shown[0]->post_modified_gmt ) : '', "\n";
		}
		// Categories as WordPress's sitemap takes them (with posts of their own), each dated by
		// the latest modified post its archive shows (child categories' posts included).
		$terms = get_terms( array( 'taxonomy' => 'category', 'hide_empty' => true, 'hierarchical' => false ) );
		foreach ( $terms as $term ) {
			$latest = get_posts(
				array(
					'cat'         => $term->term_id,
					'post_status' => 'publish',
					'orderby'     => 'modified',
					'order'       => 'DESC',
					'numberposts' => 1,
				)
			);
			echo "url\tcategory\t", get_term_link( $term ), "\t", $latest ? utc( $latest[0]->post_modified_gmt ) : '', "\n";
		}
		$hidden = get_posts(
			array(
				'post_type'   => array( 'post', 'page' ),
				'post_status' => array( 'draft', 'pending', 'private', 'future', 'trash' ),
				'numberposts' => -1,
			)
		);
		foreach ( $posts as $p ) {
			if ( '' !== $p->post_password ) {
				$hidden[] = $p;
			}
		}
		foreach ( $hidden as $p ) {
			$status = '' !== $p->post_password ? 'password' : $p->post_status;
			echo "hidden\t$status\t", preg_replace( '/__trashed$/', '', $p->post_name ), "\t", $p->ID, "\n";
		}
		break;

	case 'front':
		if ( 'posts' === ( $argv[2] ?? '' ) ) {
			update_option( 'show_on_front', 'posts' );
		} else {
			update_option( 'show_on_front', 'page' );
			update_option( 'page_on_front', by_slug( 'home', 'page' ) );
		}
		echo 'show_on_front=', get_option( 'show_on_front' ), "\n";
		break;

	case 'edit1':
		// An old post edited (not on the home page's first page), a post trashed, a draft
		// published the way cron publishes.
		must( wp_update_post( array( 'ID' => by_slug( 'first-light' ), 'post_content' => '<p>Edited.</p>' ), true ), 'wp_update_post' );
		wp_trash_post( by_slug( 'gone-soon' ) ) or fail( 'wp_trash_post' );
		wp_publish_post( by_slug( 'draft-post' ) );
		echo "edited, trashed, published\n";
		break;

	case 'edit2':
		// The protected post edited (its categories' and the home page's dates move), the
		// month-boundary post trashed (its category Asia is empty then), the slug-less draft
		// published as the editor's Publish button does, a child page edited.
		wp_set_current_user( 1 );
		must( wp_update_post( array( 'ID' => by_slug( 'members-only' ), 'post_content' => '<p>Edited.</p>' ), true ), 'wp_update_post' );
		wp_trash_post( by_slug( 'leap-night' ) ) or fail( 'wp_trash_post' );
		$draft = get_posts( array( 'title' => 'Second draft', 'post_status' => 'draft', 'numberposts' => 1 ) );
		$draft or fail( 'no Second draft' );
		must( wp_update_post( array( 'ID' => $draft[0]->ID, 'post_status' => 'publish' ), true ), 'publish Second draft' );
		must( wp_update_post( array( 'ID' => by_slug( 'team', 'page' ), 'post_content' => '<p>Edited.</p>' ), true ), 'edit Team' );
		echo "edited, trashed, published\n";
		break;

	default:
		fail( "unknown command '$command'" );
}
